// SPDX-License-Identifier: GPL-2.0-only
/// Limit chosen GPL exports to the modules that need them.
///
/// EXPORT_SYMBOL_GPL(sym) lets every GPL module link to sym.  For a symbol
/// that exists for one user only (fpu_swap_kvm_fpstate for kvm), this
/// rewrites the export into EXPORT_SYMBOL_GPL_FOR(sym, "mod1,mod2"), which
/// the module loader and modpost enforce.  The symbol -> modules table is
/// cocci/export_for.table; the generator passes it as
/// -D export_for=sym:mod1,mod2;sym2:mod3
///
// Confidence: High
// Options: --no-includes -D export_for=...

virtual patch

@initialize:python@
export_for << virtual.export_for;
@@
TABLE = dict(entry.split(":", 1) for entry in export_for.split(";") if entry)

@listed@
declarer name EXPORT_SYMBOL_GPL;
identifier sym;
position p;
@@
EXPORT_SYMBOL_GPL(sym@p);

@script:python mods_str@
sym << listed.sym;
mods;
@@
if sym in TABLE:
    coccinelle.mods = cocci.make_expr('"%s"' % TABLE[sym])
else:
    cocci.include_match(False)

@depends on patch@
declarer name EXPORT_SYMBOL_GPL, EXPORT_SYMBOL_GPL_FOR;
identifier sym;
position listed.p;
expression mods_str.mods;
@@
- EXPORT_SYMBOL_GPL(sym@p);
+ EXPORT_SYMBOL_GPL_FOR(sym, mods);
