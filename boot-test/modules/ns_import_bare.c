// SPDX-License-Identifier: GPL-2.0-only
/*
 * An external module that writes its import as modules for 6.12 and older
 * do, bare: MODULE_IMPORT_NS(DMA_BUF).  On a kernel carrying the series it
 * must build unchanged, load, resolve dma_buf_put, and modinfo must show
 * the namespace DMA_BUF.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

static int __init ns_import_bare_init(void)
{
	pr_info("resolved %ps from namespace DMA_BUF\n", dma_buf_put);

	return 0;
}

module_init(ns_import_bare_init);

static void __exit ns_import_bare_exit(void)
{
}

module_exit(ns_import_bare_exit);

MODULE_DESCRIPTION("Boot test: imports DMA_BUF (bare) and uses it");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
