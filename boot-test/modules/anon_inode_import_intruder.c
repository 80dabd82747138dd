// SPDX-License-Identifier: GPL-2.0-only
/*
 * A GPL module not named kvm that uses anon_inode_make_secure_inode
 * (exported for kvm only, namespace "module:kvm") and tries to get it by
 * importing that namespace explicitly.
 *
 * Before the series this worked: nothing enforced a "module:" namespace, so
 * importing it was enough. It proves that the import no longer opens the
 * door: the module loader refuses the module, naming it either for the
 * symbol ("symbol anon_inode_make_secure_inode is exported only for modules
 * kvm") or for the import ("importing the reserved namespace module:kvm is
 * not allowed").
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init anon_inode_import_intruder_init(void)
{
	pr_warn("took %ps, which is meant for kvm only\n",
		anon_inode_make_secure_inode);

	return 0;
}

module_init(anon_inode_import_intruder_init);

static void __exit anon_inode_import_intruder_exit(void)
{
}

module_exit(anon_inode_import_intruder_exit);

MODULE_DESCRIPTION("Boot test: imports module:kvm to use a kvm-only export");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("module:kvm");
