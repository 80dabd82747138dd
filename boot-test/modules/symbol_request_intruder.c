// SPDX-License-Identifier: GPL-2.0-only
/*
 * Looks up fpu_swap_kvm_fpstate, exported for kvm only, with
 * symbol_request(): symbol_get() after asking modprobe for the module that
 * provides it.  The lookup must be refused ("symbol_request_intruder:
 * symbol fpu_swap_kvm_fpstate is exported only for modules kvm"); the
 * module then fails to load with -EPERM.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/kmod.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <asm/fpu/api.h>

static int __init symbol_request_intruder_init(void)
{
	void *addr = symbol_request(fpu_swap_kvm_fpstate);

	if (!addr)
		return -EPERM;
	pr_warn("got fpu_swap_kvm_fpstate at %px\n", addr);
	symbol_put(fpu_swap_kvm_fpstate);
	return 0;
}

module_init(symbol_request_intruder_init);

static void __exit symbol_request_intruder_exit(void)
{
}

module_exit(symbol_request_intruder_exit);

MODULE_DESCRIPTION("Boot test: symbol_request() of a kvm-only export");
MODULE_LICENSE("GPL");
