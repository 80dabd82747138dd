// SPDX-License-Identifier: GPL-2.0-only
/*
 * An external module that uses the exports of two other external modules,
 * importing each namespace in the other spelling than its exporter wrote
 * it: NS_EXPORT_BARE quoted, NS_EXPORT_QUOTED bare.  It must build (against
 * both Module.symvers), load after them and get both answers.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

int ns_export_bare_answer(void);
int ns_export_quoted_answer(void);

static int __init ns_export_user_init(void)
{
	pr_info("answers %d and %d\n", ns_export_bare_answer(),
		ns_export_quoted_answer());

	return 0;
}

module_init(ns_export_user_init);

static void __exit ns_export_user_exit(void)
{
}

module_exit(ns_export_user_exit);

MODULE_DESCRIPTION("Boot test: uses exports of other external modules");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("NS_EXPORT_BARE");
MODULE_IMPORT_NS(NS_EXPORT_QUOTED);
