// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that imports the reserved namespace "module:kvm" and uses no
 * symbol at all.
 *
 * It proves that an explicit import of a "module:" namespace is refused on
 * its own, whatever the module uses: the module loader fails with -EPERM and
 * "reserved_ns_import: importing the reserved namespace module:kvm is not
 * allowed".
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init reserved_ns_import_init(void)
{
	pr_warn("loaded despite importing module:kvm\n");

	return 0;
}

module_init(reserved_ns_import_init);

static void __exit reserved_ns_import_exit(void)
{
}

module_exit(reserved_ns_import_exit);

MODULE_DESCRIPTION("Boot test: imports a reserved namespace");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("module:kvm");
