// SPDX-License-Identifier: GPL-2.0
/* What cannot be made portable is reported and left as it is. */
#include <linux/module.h>

#define BROKEN_IMPORT(ns) MODULE_IMPORT_NS("ns")
MODULE_IMPORT_NS("module:kvm");
