// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that uses dma_buf_put, exported in namespace "DMA_BUF", without
 * importing the namespace.
 *
 * Negative control: it proves that the namespace check is alive. The module
 * loader refuses the module with "dma_buf_no_import: module uses symbol
 * (dma_buf_put) from namespace DMA_BUF, but does not import it.".
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init dma_buf_no_import_init(void)
{
	pr_warn("resolved %ps without importing DMA_BUF\n", dma_buf_put);

	return 0;
}

module_init(dma_buf_no_import_init);

static void __exit dma_buf_no_import_exit(void)
{
}

module_exit(dma_buf_no_import_exit);

MODULE_DESCRIPTION("Boot test: uses DMA_BUF without importing it");
MODULE_LICENSE("GPL");
