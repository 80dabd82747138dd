// SPDX-License-Identifier: GPL-2.0
/* Imports written bare, quoted, over two lines, and after other code. */
#include <linux/module.h>
#include <linux/dma-buf.h>

MODULE_IMPORT_NS(DMA_BUF);
MODULE_IMPORT_NS("CXL");	/* already quoted: bare for old kernels */
MODULE_IMPORT_NS(
	IIO);

static int __init imports_init(void)
{
	return 0;
}
module_init(imports_init);
MODULE_LICENSE("GPL"); MODULE_IMPORT_NS(USB_STORAGE);
