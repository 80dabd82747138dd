// SPDX-License-Identifier: GPL-2.0-only
/*
 * Asks built-in code to look up fpu_swap_kvm_fpstate for it: work_on_cpu()
 * runs __symbol_get() itself in a kernel worker and hands back what it
 * returns, so the caller __symbol_get() sees is built-in code, not this
 * module.
 *
 * symbol_get() must fail closed: a caller that is not a module is refused
 * ("vmlinux: symbol fpu_swap_kvm_fpstate is exported only for modules
 * kvm").  The module then fails to load with -EPERM; it loads only if it
 * got the address.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/smp.h>
#include <linux/workqueue.h>

static int __init symbol_get_via_worker_init(void)
{
	long (*lookup)(void *) = (long (*)(void *))(void *)__symbol_get;
	long addr;

	addr = work_on_cpu(raw_smp_processor_id(), lookup,
			   (void *)"fpu_swap_kvm_fpstate");
	if (!addr)
		return -EPERM;
	pr_warn("got fpu_swap_kvm_fpstate at %px through a worker\n",
		(void *)addr);
	return 0;
}

module_init(symbol_get_via_worker_init);

static void __exit symbol_get_via_worker_exit(void)
{
}

module_exit(symbol_get_via_worker_exit);

MODULE_DESCRIPTION("Boot test: symbol_get() of a kvm-only export through built-in code");
MODULE_LICENSE("GPL");
