// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module named like one of Tuxedo's drivers (tuxedo_io), which declares
 * "GPL" and uses a GPL-only symbol (ktime_get).
 *
 * It proves that a module on the loader's list of licence offenders is
 * treated as proprietary whatever MODULE_LICENSE() says: it cannot resolve
 * GPL-only symbols, so the loader refuses it ("Unknown symbol ktime_get").
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/timekeeping.h>

static int __init tuxedo_io_init(void)
{
	pr_warn("resolved a GPL-only symbol at %lld ns\n", ktime_get());

	return 0;
}

module_init(tuxedo_io_init);

static void __exit tuxedo_io_exit(void)
{
}

module_exit(tuxedo_io_exit);

MODULE_DESCRIPTION("Boot test: listed offender using a GPL-only symbol");
MODULE_LICENSE("GPL");
