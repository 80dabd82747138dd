// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module named like one of Tuxedo's drivers (clevo_wmi), which declares
 * "GPL" and uses only symbols exported with plain EXPORT_SYMBOL().
 *
 * It proves that a listed offender is not refused outright: it loads, and
 * loading it taints the module and the kernel as proprietary (taint flag P,
 * bit 0 of /proc/sys/kernel/tainted).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init clevo_wmi_init(void)
{
	pr_info("loaded with plain exports only\n");

	return 0;
}

module_init(clevo_wmi_init);

static void __exit clevo_wmi_exit(void)
{
	pr_info("unloaded\n");
}

module_exit(clevo_wmi_exit);

MODULE_DESCRIPTION("Boot test: listed offender using plain exports only");
MODULE_LICENSE("GPL");
