// SPDX-License-Identifier: GPL-2.0
/* Already portable: the version-guarded idiom, both directions, and a
 * pass-through wrapper; nothing changes. */
#include <linux/module.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS(CXL);
#else
MODULE_IMPORT_NS("CXL");
#endif

#define IMPORT(ns) MODULE_IMPORT_NS(ns)
