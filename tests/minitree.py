"""A small kernel-shaped tree for the generator's tests."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "Makefile": "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 99\nEXTRAVERSION =\n",
    "kernel/module/main.c": "/* the loader */\n",
    "scripts/mod/modpost.c": "/* modpost */\n",
    "include/linux/export.h": (
        "#define __EXPORT_SYMBOL(sym, license, ns) extern typeof(sym) sym\n"
        "#define EXPORT_SYMBOL_NS(sym, ns)\t__EXPORT_SYMBOL(sym, \"\", __stringify(ns))\n"
        "#define EXPORT_SYMBOL_NS_GPL(sym, ns)\t__EXPORT_SYMBOL(sym, \"GPL\", __stringify(ns))\n"),
    "include/linux/module.h": (
        "#define MODULE_IMPORT_NS(ns)\tMODULE_INFO(import_ns, __stringify(ns))\n"),
    "include/linux/pm.h": (
        "#define _EXPORT_DEV_PM_OPS(name, license, ns)\t__EXPORT_SYMBOL(name, license, ns)\n"
        "#define EXPORT_NS_GPL_DEV_PM_OPS(name, ns)\t_EXPORT_DEV_PM_OPS(name, \"GPL\", #ns)\n"
        "#define EXPORT_PM_FN_NS_GPL(name, ns)\tEXPORT_SYMBOL_NS_GPL(name, ns)\n"),
    "drivers/foo/foo.c": (
        "#include <linux/module.h>\n"
        "/* Use EXPORT_SYMBOL_NS_GPL(sym, FOO) to export. */\n"
        "int foo(void)\n{\n\treturn 0;\n}\n"
        "EXPORT_SYMBOL_NS_GPL(foo, FOO);\n"
        "EXPORT_SYMBOL_NS(foo_bar,\n\t\t FOO);\n"
        "EXPORT_NS_GPL_DEV_PM_OPS(foo_pm, FOO) = {\n"
        "\tSYSTEM_SLEEP_PM_OPS(foo_suspend, foo_resume)\n};\n"
        "MODULE_IMPORT_NS(BAR);\n"),
    "drivers/foo/foo.h": (
        "#define FOO_EXPORT(sym)\tEXPORT_SYMBOL_NS_GPL(sym, FOO)\n"),
    "arch/x86/kernel/fpu/core.c": (
        "void fpu_swap_kvm_fpstate(void)\n{\n}\n"
        "EXPORT_SYMBOL_GPL(fpu_swap_kvm_fpstate);\n"),
    "arch/x86/kvm/Makefile": "obj-$(CONFIG_KVM) += kvm.o\n",
    # 6.1 spells DEFAULT_SYMBOL_NAMESPACE bare, in Makefiles and in C.
    "drivers/bar/Makefile": ("ccflags-y += -DDEFAULT_SYMBOL_NAMESPACE=BAR\n"
                             "obj-m += bar.o\n"),
    "drivers/bar/baz.c": ("#undef DEFAULT_SYMBOL_NAMESPACE\n"
                          "#define DEFAULT_SYMBOL_NAMESPACE BAZ\n"),
    "Documentation/core-api/symbol-namespaces.rst": (
        "Please note that due to macro expansion that argument needs to be a\n"
        "preprocessor symbol. E.g.::\n\n"
        "\tEXPORT_SYMBOL_NS(usb_stor_suspend, USB_STORAGE);\n\n"
        "Use MODULE_IMPORT_NS() to import.\n"),
    "scripts/kernel-doc": (
        "my $export_symbol_ns = '^\\s*EXPORT_SYMBOL_NS(_GPL)?\\s*\\(\\s*(\\w+)"
        "\\s*,\\s*\\w+\\)\\s*;';\n"),
    "scripts/nsdeps": ("\t$SPATCH --sp-file add_namespace.cocci -D nsdeps "
                       "-D ns=$1 $2\n\tgrep MODULE_IMPORT_NS x\n"),
    "scripts/coccinelle/misc/add_namespace.cocci": (
        "@has_ns_import@\ndeclarer name MODULE_IMPORT_NS;\n"
        "identifier virtual.ns;\n@@\nMODULE_IMPORT_NS(ns);\n"),
    ".gitignore": "/*\n",
}


def make(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
