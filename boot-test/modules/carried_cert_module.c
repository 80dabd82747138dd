// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that does nothing, signed by the boot test with a key whose
 * certificate the build key signed, the certificate carried in the
 * signature.  It must load with its signature verified (no E taint): the
 * kernel follows such a chain to trust a module, it only does not count
 * the signer as a built-in key for EXPORT_SYMBOL_GPL_FOR() symbols.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init carried_cert_module_init(void)
{
	pr_info("loaded\n");
	return 0;
}

module_init(carried_cert_module_init);

static void __exit carried_cert_module_exit(void)
{
}

module_exit(carried_cert_module_exit);

MODULE_DESCRIPTION("Boot test: a module signed with its certificate carried");
MODULE_LICENSE("GPL");
