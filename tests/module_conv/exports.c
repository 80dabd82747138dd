// SPDX-License-Identifier: GPL-2.0
/*
 * Exports, a wrapper that bakes the namespace in (the whole #define is
 * spelled twice), a pass-through wrapper (its parameter stays bare, its
 * callers are converted) and prose: users write MODULE_IMPORT_NS(MYDRV).
 */
#include <linux/export.h>
#include <linux/pm.h>

#define MYDRV_EXPORT(sym) \
	EXPORT_SYMBOL_NS_GPL(sym, MYDRV)
#define PASS_EXPORT(sym, ns) EXPORT_SYMBOL_NS_GPL(sym, ns)
#define PASS_AGAIN(s, n) PASS_EXPORT(s, n)

int mydrv_a(void) { return 0; }
EXPORT_SYMBOL_NS(mydrv_a, MYDRV);
int mydrv_b(void) { return 0; }
EXPORT_SYMBOL_NS_GPL(mydrv_b,
		     MYDRV);
int mydrv_c(void) { return 0; }
MYDRV_EXPORT(mydrv_c);
int mydrv_d(void) { return 0; }
PASS_AGAIN(mydrv_d, MYDRV);

static int mydrv_suspend(struct device *dev) { return 0; }
static int mydrv_resume(struct device *dev) { return 0; }
EXPORT_NS_GPL_SIMPLE_DEV_PM_OPS(mydrv_pm, mydrv_suspend, mydrv_resume, MYDRV);
