// Calls of the namespace macros as drivers write them.
#include <linux/module.h>

int foo_probe(void)
{
	return 0;
}
EXPORT_SYMBOL_NS_GPL(foo_probe, FOO_CORE);
EXPORT_SYMBOL_NS(foo_remove, FOO_CORE);

/* Split over two lines: the line break stays, so __LINE__ does too. */
EXPORT_SYMBOL_NS_GPL(foo_a_rather_long_symbol_name_for_one_line,
		     FOO_CORE);

/* Already quoted: left alone. */
EXPORT_SYMBOL_NS_GPL(foo_done, "FOO_CORE");
MODULE_IMPORT_NS("BAR_DONE");

MODULE_IMPORT_NS(BAR);

/* Comments that show the syntax, EXPORT_SYMBOL_NS(sym, FOO_CORE), are
 * prose to spatch: the generator's text step quotes them. */

/* The namespace is also a macro here: it is quoted as written, no longer
 * expanded by __stringify(). */
#define QUUX_NS 0x10
EXPORT_SYMBOL_NS(foo_quux, QUUX_NS);

void foo_use(void)
{
	/* Not a namespace macro: untouched. */
	bar(foo_probe, FOO_CORE);
}
