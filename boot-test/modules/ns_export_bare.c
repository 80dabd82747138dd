// SPDX-License-Identifier: GPL-2.0-only
/*
 * An external module that exports a symbol into namespace NS_EXPORT_BARE,
 * writing the namespace bare: EXPORT_SYMBOL_NS_GPL(sym, NS_EXPORT_BARE).
 * ns_export_user, another external module, imports it and calls it.
 * Module.symvers must name the namespace without quotes.
 */

#include <linux/init.h>
#include <linux/module.h>

int ns_export_bare_answer(void);

int ns_export_bare_answer(void)
{
	return 42;
}
EXPORT_SYMBOL_NS_GPL(ns_export_bare_answer, NS_EXPORT_BARE);

static int __init ns_export_bare_init(void)
{
	return 0;
}

module_init(ns_export_bare_init);

static void __exit ns_export_bare_exit(void)
{
}

module_exit(ns_export_bare_exit);

MODULE_DESCRIPTION("Boot test: exports into a namespace written bare");
MODULE_LICENSE("GPL");
