// SPDX-License-Identifier: GPL-2.0-only
/*
 * An out-of-tree module built under the name kvm that says it is in-tree
 * (MODULE_INFO(intree, "Y"), a string any module can write) and uses
 * fpu_swap_kvm_fpstate, which the x86 FPU code exports for kvm only.
 *
 * The boot test loads it unsigned, signed with a key the kernel does not
 * know, and signed with a key the kernel trusts through its secondary
 * keyring but did not build in.  The loader must refuse it each time with
 * "kvm: symbol fpu_swap_kvm_fpstate is exported only for modules kvm":
 * only a signature by a built-in key makes a module in-tree.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <asm/fpu/api.h>

static int __init kvm_impostor_init(void)
{
	pr_warn("impostor took %ps\n", fpu_swap_kvm_fpstate);

	return 0;
}

module_init(kvm_impostor_init);

static void __exit kvm_impostor_exit(void)
{
}

module_exit(kvm_impostor_exit);

MODULE_DESCRIPTION("Boot test: an out-of-tree kvm that forges the intree tag");
MODULE_LICENSE("GPL");
MODULE_INFO(intree, "Y");
