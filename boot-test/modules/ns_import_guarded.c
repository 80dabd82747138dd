// SPDX-License-Identifier: GPL-2.0-only
/*
 * An external module with the idiom that projects adopted when upstream
 * made namespaces strings in 6.13: quoted from 6.13 on, bare before.  On a
 * 6.12 kernel carrying the series it takes the bare branch; it must build
 * unchanged, load, and modinfo must show DMA_BUF.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/version.h>

static int __init ns_import_guarded_init(void)
{
	pr_info("resolved %ps from namespace DMA_BUF\n", dma_buf_put);

	return 0;
}

module_init(ns_import_guarded_init);

static void __exit ns_import_guarded_exit(void)
{
}

module_exit(ns_import_guarded_exit);

MODULE_DESCRIPTION("Boot test: imports DMA_BUF (guarded) and uses it");
MODULE_LICENSE("GPL");
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif
