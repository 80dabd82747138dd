// SPDX-License-Identifier: GPL-2.0-only
/*
 * Input of the "make nsdeps" case, never loaded: built under the name kvm,
 * it uses dma_buf_put (namespace "DMA_BUF") and fpu_swap_kvm_fpstate
 * (namespace "module:kvm") and imports neither.
 *
 * make nsdeps must add the import of "DMA_BUF", quoted as the converted
 * tree writes it, and nothing for "module:kvm", which cannot be imported.
 *
 * Not a word here may contain the name of the import macro: scripts/nsdeps
 * moves the imports to the first line that does (sed '/.../Q'), which
 * would put the new import inside this comment.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <asm/fpu/api.h>

static int __init nsdeps_kvm_init(void)
{
	pr_info("uses %ps and %ps\n", dma_buf_put, fpu_swap_kvm_fpstate);

	return 0;
}

module_init(nsdeps_kvm_init);

static void __exit nsdeps_kvm_exit(void)
{
}

module_exit(nsdeps_kvm_exit);

MODULE_DESCRIPTION("Boot test: input of make nsdeps");
MODULE_LICENSE("GPL");
