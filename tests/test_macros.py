"""nsgen/macros.py: which #defines take a namespace, and which stringify it."""

from __future__ import annotations

from nsgen import macros

HEADER = r'''
#define __namespace_must_be_a_string_literal(ns)	"" ns
#define __ns_as_written(ns)	__stringify(ns)
#ifdef KBUILD_EXTMOD
#define MODULE_IMPORT_NS(ns)	\
	static const char x[] __section(".discard.import_ns") = __ns_as_written(ns)
#define EXPORT_SYMBOL_NS(sym, ns)	__EXPORT_SYMBOL(sym, "", __ns_as_written(ns))
#else
#define MODULE_IMPORT_NS(ns)	\
	MODULE_INFO(import_ns, __namespace_must_be_a_string_literal(__stringify(ns)))
#define EXPORT_SYMBOL_NS(sym, ns)	__EXPORT_SYMBOL(sym, "", __stringify(ns))
#endif
#define WRAP(x)	EXPORT_SYMBOL_NS(x, FOO)
'''


def found() -> macros.NsMacros:
    return macros.discover([("include/linux/x.h", HEADER)])


def test_pass_through_macros_are_seen_through() -> None:
    """A namespace reaching MODULE_INFO(import_ns, ...) through a macro that
    passes it on (or checks it with "") still makes a root."""
    roots = {(d.name, d.line, p) for d, p in found().roots}
    assert ("MODULE_IMPORT_NS", 9, "ns") in roots
    assert ("EXPORT_SYMBOL_NS", 11, "ns") in roots


def test_as_written_helper_is_no_root() -> None:
    """The external modules' definitions stringify through a helper that is
    not a sink: they are left as they are, and the helpers are no macros
    to quote calls of."""
    f = found()
    assert {d.line for d, _ in f.roots} == {9, 11}
    assert f.names() == ["EXPORT_SYMBOL_NS", "MODULE_IMPORT_NS"]
    assert macros.pass_through(
        macros.defines("x.h", HEADER)) == {
            "__namespace_must_be_a_string_literal"}


def test_unwrap() -> None:
    through = {"a", "b"}
    assert macros.unwrap("a(b( __stringify(ns) ))", through) == \
        "__stringify(ns)"
    assert macros.unwrap("c(ns)", through) == "c(ns)"
