// SPDX-License-Identifier: GPL-2.0-only
/// Write every symbol namespace as a C string literal.
///
/// EXPORT_SYMBOL_NS(sym, FOO), EXPORT_SYMBOL_NS_GPL(sym, FOO) and
/// MODULE_IMPORT_NS(FOO) take their namespace as a bare identifier
/// that the macros stringify.  Once the namespace is a string, an
/// export can name a list of modules ("kvm,kvm_amd") that no
/// identifier could spell.  This quotes the namespace argument of
/// those macros and of every wrapper that passes a namespace on;
/// already quoted arguments are left alone.
///
/// The namespace is the last argument of each macro.  The generator
/// finds the macro names (the three above plus the wrappers defined
/// in the tree) and passes them as -D ns_macros=NAME,NAME,...
///
// Confidence: High
// Options: --include-headers --max-width 200 -D ns_macros=...

virtual patch
virtual report

@initialize:python@
ns_macros << virtual.ns_macros;
@@
NS_MACROS = frozenset(name for name in ns_macros.split(",") if name)
CONTINUED = chr(92)     # a backslash, which this file may not spell


def quoted(ns):
    """The namespace as a C string: the text of the new token."""
    return chr(34) + ns + chr(34)


def define_params(line):
    """The parameters of a '#define NAME(...)' line, or None."""
    s = line.strip()
    if not s.startswith("#"):
        return None
    s = s[1:].strip()
    if not s.startswith("define"):
        return None
    name, paren, rest = s[len("define"):].strip().partition("(")
    if not paren or not name or not name.replace("_", "a").isalnum():
        return None
    return [x.strip() for x in rest.split(")")[0].split(",")]


def macro_parameter(ns, pos):
    """Is ns a parameter of the #define that pos stands in?  A
    pass-through wrapper such as
    '#define W(sym, ns) EXPORT_SYMBOL_NS(sym, ns)'
    must keep its parameter bare."""
    with open(pos.file, errors="replace") as f:
        lines = f.read().split(chr(10))
    i = int(pos.line) - 1
    while i > 0 and lines[i - 1].rstrip().endswith(CONTINUED):
        i -= 1
    return ns in (define_params(lines[i]) or [])

// A statement-like use at top level: EXPORT_SYMBOL_NS_GPL(sym, FOO);
@top_level depends on patch@
declarer d : script:python () { d in NS_MACROS };
expression list es;
identifier ns;
fresh identifier s = script:python(ns) { quoted(ns) };
@@
d(es,
- ns
+ s
 );

// The PM-ops wrappers define a variable:
// EXPORT_NS_GPL_DEV_PM_OPS(x, FOO) = {...};
// spatch only parses that shape when the declarer is named in the
// rule, and the dev_pm_ops entry macros inside the braces need
// ns_string.h.
@pm_ops_init depends on patch@
declarer name EXPORT_NS_DEV_PM_OPS, EXPORT_NS_GPL_DEV_PM_OPS;
declarer name EXPORT_NS_DEV_SLEEP_PM_OPS;
declarer name EXPORT_NS_GPL_DEV_SLEEP_PM_OPS;
expression list es;
identifier ns;
fresh identifier s = script:python(ns) { quoted(ns) };
initializer i;
@@
(
EXPORT_NS_DEV_PM_OPS(es,
- ns
+ s
 ) = i;
|
EXPORT_NS_GPL_DEV_PM_OPS(es,
- ns
+ s
 ) = i;
|
EXPORT_NS_DEV_SLEEP_PM_OPS(es,
- ns
+ s
 ) = i;
|
EXPORT_NS_GPL_DEV_SLEEP_PM_OPS(es,
- ns
+ s
 ) = i;
)

// An expression-like use: inside a function or in a #define body
// such as
// #define IWL_EXPORT_SYMBOL(sym) EXPORT_SYMBOL_NS_GPL(sym, IWLWIFI)
// but not the parameter of a pass-through wrapper.
@in_expression depends on patch@
identifier f : script:python () { f in NS_MACROS };
expression list es;
position p;
identifier ns : script:python (p) { not macro_parameter(ns, p[0]) };
fresh identifier s = script:python(ns) { quoted(ns) };
@@
f(es,
- ns@p
+ s
 )

// What is left: every bare top-level namespace argument.
@left depends on report@
declarer d : script:python () { d in NS_MACROS };
expression list es;
identifier ns;
position p;
@@
d(es, ns@p);

@script:python depends on report@
ns << left.ns;
p << left.p;
@@
coccilib.report.print_report(p[0], "bare namespace %s" % ns)
