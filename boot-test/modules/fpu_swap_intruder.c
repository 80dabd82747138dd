// SPDX-License-Identifier: GPL-2.0-only
/*
 * A GPL module not named kvm that uses fpu_swap_kvm_fpstate, which the x86
 * FPU code exports for kvm only (EXPORT_SYMBOL_GPL_FOR(..., "kvm")).
 *
 * It proves that a module-restricted export is refused to every other
 * module: modpost stops it at build time, and when built anyway
 * (KBUILD_MODPOST_WARN=1) the module loader refuses it with
 * "fpu_swap_intruder: symbol fpu_swap_kvm_fpstate is exported only for
 * modules kvm".
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <asm/fpu/api.h>

static int __init fpu_swap_intruder_init(void)
{
	pr_warn("took %ps, which is meant for kvm only\n",
		fpu_swap_kvm_fpstate);

	return 0;
}

module_init(fpu_swap_intruder_init);

static void __exit fpu_swap_intruder_exit(void)
{
}

module_exit(fpu_swap_intruder_exit);

MODULE_DESCRIPTION("Boot test: uses an export restricted to kvm");
MODULE_LICENSE("GPL");
