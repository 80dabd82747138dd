// SPDX-License-Identifier: GPL-2.0-only
/*
 * An external module that exports a symbol into namespace NS_EXPORT_QUOTED,
 * writing the namespace quoted: EXPORT_SYMBOL_NS_GPL(sym, "NS_EXPORT_QUOTED").
 * ns_export_user, another external module, imports it and calls it.
 * Module.symvers must name the namespace without quotes.
 */

#include <linux/init.h>
#include <linux/module.h>

int ns_export_quoted_answer(void);

int ns_export_quoted_answer(void)
{
	return 42;
}
EXPORT_SYMBOL_NS_GPL(ns_export_quoted_answer, "NS_EXPORT_QUOTED");

static int __init ns_export_quoted_init(void)
{
	return 0;
}

module_init(ns_export_quoted_init);

static void __exit ns_export_quoted_exit(void)
{
}

module_exit(ns_export_quoted_exit);

MODULE_DESCRIPTION("Boot test: exports into a namespace written quoted");
MODULE_LICENSE("GPL");
