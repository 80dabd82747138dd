// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that imports the converted namespace "DMA_BUF" (built in) and
 * uses one of its symbols (dma_buf_put).
 *
 * Positive control: it proves that string namespaces still work after the
 * tree-wide conversion, and that the new checks refuse nothing legitimate.
 * The module must load.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init dma_buf_import_init(void)
{
	pr_info("resolved %ps from namespace DMA_BUF\n", dma_buf_put);

	return 0;
}

module_init(dma_buf_import_init);

static void __exit dma_buf_import_exit(void)
{
}

module_exit(dma_buf_import_exit);

MODULE_DESCRIPTION("Boot test: imports DMA_BUF and uses it");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("DMA_BUF");
