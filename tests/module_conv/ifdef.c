// SPDX-License-Identifier: GPL-2.0
/* Under other conditionals (the guard goes inside) and the default
 * namespace of the file. */
#define DEFAULT_SYMBOL_NAMESPACE MYDRV	/* this file's exports */
#include <linux/module.h>

#ifdef CONFIG_DMA_SHARED_BUFFER
MODULE_IMPORT_NS(DMA_BUF);
#endif
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 4, 0)
MODULE_IMPORT_NS(CXL);
#endif
