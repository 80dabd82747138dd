// SPDX-License-Identifier: GPL-2.0-only
/// Write every symbol namespace as a C string literal.
///
/// EXPORT_SYMBOL_NS(sym, FOO), EXPORT_SYMBOL_NS_GPL(sym, FOO) and
/// MODULE_IMPORT_NS(FOO) take their namespace as a bare identifier that the
/// macros stringify.  Once the namespace is a string, an export can name a
/// list of modules ("kvm,kvm_amd") that no identifier could spell.  This
/// quotes the namespace argument of those macros and of every wrapper that
/// passes a namespace on; already quoted arguments are left alone.
///
/// The namespace is the last argument of each macro.  The generator finds the
/// macro names (the three above plus the wrappers defined in the tree) and
/// passes them as -D ns_macros=NAME,NAME,...
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
    return cocci.make_expr('"%s"' % ns)


def define_params(line):
    """The parameters of a function-like '#define NAME(...)' line, or None."""
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
    """Is ns a parameter of the #define that pos stands in?  A pass-through
    wrapper such as '#define W(sym, ns) EXPORT_SYMBOL_NS(sym, ns)' must keep
    its parameter bare."""
    with open(pos.file, errors="replace") as f:
        lines = f.read().split(chr(10))
    i = int(pos.line) - 1
    while i > 0 and lines[i - 1].rstrip().endswith(CONTINUED):
        i -= 1
    return ns in (define_params(lines[i]) or [])

// A statement-like use at top level: EXPORT_SYMBOL_NS_GPL(sym, FOO);
@top_level@
declarer d;
expression list es;
identifier ns;
position p;
@@
d(es, ns@p);

@script:python top_level_str@
d << top_level.d;
ns << top_level.ns;
s;
@@
if d in NS_MACROS:
    coccinelle.s = quoted(ns)
else:
    cocci.include_match(False)

@depends on patch@
declarer top_level.d;
expression list top_level.es;
identifier top_level.ns;
position top_level.p;
expression top_level_str.s;
@@
d(es,
- ns@p
+ s
 );

// The PM-ops wrappers define a variable: EXPORT_NS_GPL_DEV_PM_OPS(x, FOO) = {...};
// spatch only parses that shape when the declarer is named in the rule.
@pm_ops_init@
declarer name EXPORT_NS_DEV_PM_OPS, EXPORT_NS_GPL_DEV_PM_OPS;
declarer name EXPORT_NS_DEV_SLEEP_PM_OPS, EXPORT_NS_GPL_DEV_SLEEP_PM_OPS;
expression list es;
identifier ns;
initializer i;
position p;
@@
(
EXPORT_NS_DEV_PM_OPS(es, ns@p) = i;
|
EXPORT_NS_GPL_DEV_PM_OPS(es, ns@p) = i;
|
EXPORT_NS_DEV_SLEEP_PM_OPS(es, ns@p) = i;
|
EXPORT_NS_GPL_DEV_SLEEP_PM_OPS(es, ns@p) = i;
)

@script:python pm_ops_init_str@
ns << pm_ops_init.ns;
s;
@@
coccinelle.s = quoted(ns)

@depends on patch@
identifier pm_ops_init.ns;
position pm_ops_init.p;
expression pm_ops_init_str.s;
@@
- ns@p
+ s

// An expression-like use: inside a function or in a #define body such as
// #define IWL_EXPORT_SYMBOL(sym) EXPORT_SYMBOL_NS_GPL(sym, IWLWIFI)
@in_expression@
identifier f : script:python () { f in NS_MACROS };
expression list es;
identifier ns;
position p;
@@
f(es, ns@p)

@script:python in_expression_str@
ns << in_expression.ns;
p << in_expression.p;
s;
@@
if macro_parameter(ns, p[0]):
    cocci.include_match(False)
else:
    coccinelle.s = quoted(ns)

@depends on patch@
identifier f;
expression list es;
identifier in_expression.ns;
position in_expression.p;
expression in_expression_str.s;
@@
f(es,
- ns@p
+ s
 )

@script:python depends on report@
ns << top_level.ns;
p << top_level.p;
@@
coccilib.report.print_report(p[0], "bare namespace %s" % ns)
