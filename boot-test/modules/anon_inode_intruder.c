// SPDX-License-Identifier: GPL-2.0-only
/*
 * A GPL module not named kvm that uses anon_inode_make_secure_inode, which
 * fs/anon_inodes.c exports for kvm only (the pre-existing
 * EXPORT_SYMBOL_GPL_FOR_MODULES(..., "kvm"), namespace "module:kvm").
 *
 * It proves that the export restriction that already existed in the tree is
 * now enforced: the module loader refuses the module with
 * "anon_inode_intruder: symbol anon_inode_make_secure_inode is exported only
 * for modules kvm".
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init anon_inode_intruder_init(void)
{
	pr_warn("took %ps, which is meant for kvm only\n",
		anon_inode_make_secure_inode);

	return 0;
}

module_init(anon_inode_intruder_init);

static void __exit anon_inode_intruder_exit(void)
{
}

module_exit(anon_inode_intruder_exit);

MODULE_DESCRIPTION("Boot test: uses an export restricted to kvm");
MODULE_LICENSE("GPL");
