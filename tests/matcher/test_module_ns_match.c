// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host-side unit test of include/linux/module_ns_match.h, the one
 * implementation of "may module M use a symbol exported into the namespace
 * module:LIST" (EXPORT_SYMBOL_GPL_FOR()).  The module loader and modpost
 * both include that header; this program includes the same file, taken
 * from a patched kernel tree or from the patch itself (see the Makefile).
 *
 * Output is TAP, then a line "N passed, N failed"; the exit status is 1 if
 * any case failed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_ns_match.h"

/* 55 characters: the longest name that fits in MODULE_NAME_LEN on 64-bit. */
#define LONG_NAME "a_module_name_that_is_as_long_as_a_module_name_can_be_x"

/* Can module @modname use a symbol exported into namespace @ns? */
struct ns_case {
	const char *what;
	const char *ns;
	const char *modname;
	bool admitted;
};

static const struct ns_case ns_cases[] = {
	/* exact names */
	{ "exact name", "module:kvm", "kvm", true },
	{ "first of two", "module:kvm,kvm_amd", "kvm", true },
	{ "second of two", "module:kvm,kvm_amd", "kvm_amd", true },
	{ "unlisted name", "module:kvm,kvm_amd", "evil", false },
	{ "case sensitive", "module:kvm", "KVM", false },
	/* '-' and '_' are the same character, either way round */
	{ "dash in list admits underscore", "module:kvm-amd", "kvm_amd", true },
	{ "underscore in list admits dash", "module:kvm_amd", "kvm-amd", true },
	{ "dashes and underscores mixed", "module:a-b_c", "a_b-c", true },
	/* prefixes and extensions of a listed name are other names */
	{ "shorter name", "module:kvm", "kv", false },
	{ "longer name", "module:kvm", "kvmx", false },
	{ "name with suffix", "module:kvm", "kvm_intel", false },
	{ "listed name longer than module", "module:kvm_intel", "kvm", false },
	/* a trailing '*' is a prefix pattern */
	{ "kvm-* admits kvm_intel", "module:kvm-*", "kvm_intel", true },
	{ "kvm-* admits kvm-amd", "module:kvm-*", "kvm-amd", true },
	{ "kvm_* admits kvm-amd", "module:kvm_*", "kvm-amd", true },
	{ "kvm* admits kvm", "module:kvm*", "kvm", true },
	{ "kvm* admits kvmx", "module:kvm*", "kvmx", true },
	{ "kvm-* refuses kvm", "module:kvm-*", "kvm", false },
	{ "kvm-* refuses kv", "module:kvm-*", "kv", false },
	{ "pattern in a list", "module:kvm,kvm-*", "kvm_amd", true },
	/* nothing else is a pattern */
	{ "bare * admits nobody", "module:*", "kvm", false },
	{ "leading * is literal", "module:*kvm", "kvm", false },
	{ "inner * is literal", "module:k*m", "kvm", false },
	{ "? is literal", "module:kv?", "kvm", false },
	{ "[] is literal", "module:kv[m]", "kvm", false },
	{ "double * is literal", "module:kvm**", "kvm", false },
	/* empty entries, empty lists */
	{ "empty list", "module:", "kvm", false },
	{ "empty list, empty name", "module:", "", false },
	{ "only a comma", "module:,", "kvm", false },
	{ "leading comma", "module:,kvm", "kvm", true },
	{ "trailing comma", "module:kvm,", "kvm", true },
	{ "empty entry inside", "module:kvm,,kvm_amd", "kvm_amd", true },
	{ "empty name", "module:kvm", "", false },
	{ "empty name, bare *", "module:*", "", false },
	/* entries are not trimmed */
	{ "space after comma", "module:kvm, kvm_amd", "kvm_amd", false },
	{ "space before comma", "module:kvm ,kvm_amd", "kvm", false },
	{ "leading space", "module: kvm", "kvm", false },
	{ "trailing space", "module:kvm ", "kvm", false },
	{ "untouched entry next to spaces", "module:kvm , kvm_amd,x", "x", true },
	/* long names */
	{ "long name", "module:" LONG_NAME, LONG_NAME, true },
	{ "long name last in list", "module:kvm,kvm_amd," LONG_NAME, LONG_NAME, true },
	{ "long entry, shorter name", "module:" LONG_NAME "x", LONG_NAME, false },
	{ "short entry, long name", "module:a_module_name_that_is_as_long", LONG_NAME, false },
	{ "prefix pattern, long name", "module:a_module_name_that_is_as_long*", LONG_NAME, true },
	/* not a module namespace: the matcher admits nobody */
	{ "no namespace", NULL, "kvm", false },
	{ "default namespace", "", "kvm", false },
	{ "ordinary namespace", "DMA_BUF", "kvm", false },
	{ "namespace named like a module", "kvm", "kvm", false },
	{ "prefix without colon", "modulekvm", "kvm", false },
	{ "prefix in other case", "MODULE:kvm", "kvm", false },
	{ "prefix after a space", " module:kvm", "kvm", false },
};

static unsigned int tests_run, tests_failed;

static void report(bool ok, const char *desc)
{
	tests_run++;
	if (!ok)
		tests_failed++;
	printf("%s %u - %s\n", ok ? "ok" : "not ok", tests_run, desc);
}

/* What the loader and modpost ask: a "module:" namespace listing @modname. */
static bool admitted(const char *ns, const char *modname)
{
	const char *list = module_ns_list(ns);

	return list && module_ns_list_match(list, modname);
}

static void test_ns_cases(void)
{
	char desc[256];
	size_t i;

	for (i = 0; i < sizeof(ns_cases) / sizeof(ns_cases[0]); i++) {
		const struct ns_case *c = &ns_cases[i];

		snprintf(desc, sizeof(desc), "%s: \"%s\" %s \"%s\"", c->what,
			 c->ns ? c->ns : "(null)",
			 c->admitted ? "admits" : "refuses", c->modname);
		report(admitted(c->ns, c->modname) == c->admitted, desc);
	}
}

/* module_ns_list() returns the list itself, which the messages print. */
static void test_list_pointer(void)
{
	static const char ns[] = "module:kvm,kvm-*";

	report(module_ns_list(ns) == ns + strlen(MODULE_NS_PREFIX),
	       "list pointer: the list of \"module:kvm,kvm-*\" starts after the prefix");
}

/* A long list: the admitted module is the last of many entries. */
static void test_many_entries(void)
{
	char ns[4096] = MODULE_NS_PREFIX;
	char entry[32];
	int i;

	for (i = 0; i < 300; i++) {
		snprintf(entry, sizeof(entry), "mod_%d,", i);
		strcat(ns, entry);
	}
	strcat(ns, "target");
	report(admitted(ns, "target"),
	       "many entries: a 301-entry list admits its last entry \"target\"");
	report(admitted(ns, "mod-299"),
	       "many entries: a 301-entry list admits \"mod-299\" as mod_299");
	report(!admitted(ns, "mod_300"),
	       "many entries: a 301-entry list refuses \"mod_300\"");
}

/* Names far beyond MODULE_NAME_LEN: no fixed-size buffer anywhere. */
static void test_very_long_name(void)
{
	char name[1001], ns[1100] = MODULE_NS_PREFIX;

	memset(name, 'm', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	strcat(ns, name);
	report(admitted(ns, name),
	       "very long name: a 1000-character entry admits the same name");
	name[500] = 'x';
	report(!admitted(ns, name),
	       "very long name: a 1000-character entry refuses a name differing in the middle");
}

int main(void)
{
	printf("TAP version 13\n");
	test_ns_cases();
	test_list_pointer();
	test_many_entries();
	test_very_long_name();
	printf("1..%u\n", tests_run);
	printf("%u passed, %u failed\n", tests_run - tests_failed, tests_failed);
	return tests_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
