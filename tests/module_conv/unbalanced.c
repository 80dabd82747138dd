// SPDX-License-Identifier: GPL-2.0
/* A call that does not close is reported and left as it is; the calls
 * around it are still converted. */
#include <linux/module.h>

MODULE_IMPORT_NS(DMA_BUF;
MODULE_IMPORT_NS(CXL);
#define IMPORT_IIO MODULE_IMPORT_NS(IIO
EXPORT_SYMBOL_NS_GPL(unbalanced_fn, USB_STORAGE
