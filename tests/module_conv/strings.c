// SPDX-License-Identifier: GPL-2.0
/* Namespace-macro text in string and character literals is data, never
 * rewritten; the real calls are, and so is this comment's prose:
 * users write MODULE_IMPORT_NS(STRINGS). */
#include <linux/module.h>

static const char quote = '"';	/* a raw '"' opens no string */
static const char *url = "http://example.org/MODULE_IMPORT_NS(CXL)";

static int __init strings_init(void)
{
	pr_info("needs MODULE_IMPORT_NS(DMA_BUF)\n");
	pr_info("escaped \" MODULE_IMPORT_NS(IIO) \\");
	pr_info("continued \
MODULE_IMPORT_NS(USB_STORAGE) /* not a comment */");
	return quote == '\'' ? 0 : 1;
}
module_init(strings_init);
MODULE_IMPORT_NS(DMA_BUF); // prose: MODULE_IMPORT_NS(CXL)
#define STRINGS_NEEDS "EXPORT_SYMBOL_NS_GPL(strings_fn, STRINGS)"
EXPORT_SYMBOL_NS_GPL(strings_init, STRINGS);
