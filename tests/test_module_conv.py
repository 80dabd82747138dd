"""generate.py module: the external-module converter, on the fixtures of
tests/module_conv/ (NAME.c -> NAME.res, Kbuild -> Kbuild.res)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen import macros, module  # noqa: E402

FIXTURES = PROJECT / "tests" / "module_conv"
INPUTS = sorted(p.name for p in FIXTURES.iterdir() if p.suffix != ".res")


def expected(name: str) -> Path:
    stem = name[:-2] if name.endswith(".c") else name
    return FIXTURES / f"{stem}.res"


@pytest.mark.parametrize("name", INPUTS)
def test_fixture(name: str) -> None:
    table = module.load_table()
    got = module.convert_file(FIXTURES, name, table).new
    assert got == expected(name).read_text()


@pytest.mark.parametrize("name", INPUTS)
def test_idempotent(name: str, tmp_path: Path) -> None:
    shutil.copy(expected(name), tmp_path / name)
    r = module.convert_file(tmp_path, name, module.load_table())
    assert r.new == r.old


def test_never_quotes_a_parameter() -> None:
    text = ("#define A(s, ns) EXPORT_SYMBOL_NS_GPL(s, ns)\n"
            "#define B(ns) MODULE_IMPORT_NS(ns)\n")
    new, changes = module.convert_c("x.c", text, module.load_table())
    assert new == text and not changes


def test_warnings_are_reported() -> None:
    r = module.convert_file(FIXTURES, "warnings.c", module.load_table())
    assert [c.line for c in r.changes if c.warning] == [5, 6]


def test_never_rewrites_inside_a_string() -> None:
    text = ('#include <linux/module.h>\n'
            'static void f(void)\n{\n'
            '\tpr_info("needs MODULE_IMPORT_NS(DMA_BUF)\\n");\n}\n')
    new, changes = module.convert_c("x.c", text, module.load_table())
    assert new == text and not changes


def test_strings_and_chars_hide_no_call() -> None:
    """The lexer's corner cases: an escaped quote, a raw '"', '//' in a
    string, a string and a '//' comment continued on the next line."""
    table = module.load_table()
    for code in ('char q = \'"\'; MODULE_IMPORT_NS(A);',
                 'char *s = "\\" \\"" ; MODULE_IMPORT_NS(A);',
                 'char *u = "http://x/*"; MODULE_IMPORT_NS(A);',
                 'char c = \'\\\'\'; MODULE_IMPORT_NS(A); /* \' */'):
        new, changes = module.convert_c("x.c", code + "\n", table)
        assert [c.line for c in changes] == [1], code
        assert 'MODULE_IMPORT_NS("A");' in new, code
    for hidden in ('char *s = "a\\\nMODULE_IMPORT_NS(A)";',
                   '/* MODULE_IMPORT_NS("A"); */',
                   'char *s = "a \\" MODULE_IMPORT_NS(A)";'):
        new, changes = module.convert_c("x.c", hidden + "\n", table)
        assert new == hidden + "\n" and not changes, hidden
    # A '//' comment continued by a backslash goes on: prose, quoted.
    new, changes = module.convert_c(
        "x.c", "// a \\\nMODULE_IMPORT_NS(A);\n", table)
    assert new == '// a \\\nMODULE_IMPORT_NS("A");\n'
    assert [str(c) for c in changes] == [
        "x.c:2: MODULE_IMPORT_NS(A) in a comment: quoted"]


def test_a_comment_is_prose() -> None:
    text = "/* use MODULE_IMPORT_NS(FOO) */\n"
    new, changes = module.convert_c("x.c", text, module.load_table())
    assert new == '/* use MODULE_IMPORT_NS("FOO") */\n'
    assert [str(c) for c in changes] == [
        'x.c:1: MODULE_IMPORT_NS(FOO) in a comment: quoted']


def test_unbalanced_calls_are_warned() -> None:
    r = module.convert_file(FIXTURES, "unbalanced.c", module.load_table())
    assert [str(c) for c in r.changes if c.warning] == [
        "unbalanced.c:6: warning: MODULE_IMPORT_NS(DMA_BUF: no closing "
        "parenthesis before ';': not a call this converter can read; "
        "left as it is",
        "unbalanced.c:8: warning: MODULE_IMPORT_NS(IIO: no closing "
        "parenthesis before the end of the #define: not a call this "
        "converter can read; left as it is",
        "unbalanced.c:9: warning: EXPORT_SYMBOL_NS_GPL(unbalanced_fn, "
        "USB_STORAGE: no closing parenthesis before the end of the file: "
        "not a call this converter can read; left as it is"]


def test_cli_diff_then_in_place(tmp_path: Path) -> None:
    src = tmp_path / "mod"
    shutil.copytree(FIXTURES, src)
    for p in src.glob("*.res"):
        p.unlink()
    cmd = [sys.executable, str(PROJECT / "generate.py"), "module", str(src)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "+++ b/imports.c" in p.stdout and "+++ b/portable.c" not in p.stdout
    assert "imports.c:6: MODULE_IMPORT_NS(DMA_BUF)" in p.stderr
    assert (src / "imports.c").read_text() == \
        (FIXTURES / "imports.c").read_text()
    p = subprocess.run(cmd + ["--in-place"], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr
    for name in INPUTS:
        assert (src / name).read_text() == expected(name).read_text(), name
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert p.stdout == "" and "0 file(s) to change" in p.stderr


def test_missing_directory(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, str(PROJECT / "generate.py"),
                        "module", str(tmp_path / "none")],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.strip().endswith("none: not a directory")


def kernel_tree() -> Path | None:
    for p in (os.environ.get("KSRC"),
              Path.home() / ".cache/ns-series/src/linux-source-6.12"):
        if p and (Path(p) / "include/linux/export.h").is_file():
            return Path(p)
    return None


@pytest.mark.skipif(kernel_tree() is None, reason="no kernel tree unpacked")
def test_table_is_the_kernels_macros() -> None:
    """cocci/ns_macros.table holds the namespace macros that the tree's
    include/linux/ defines (discovered as the generator does)."""
    root = kernel_tree()
    assert root is not None
    files = [(str(p), macros.read_text(p))
             for p in sorted((root / "include/linux").glob("*.h"))]
    found = macros.discover(files)
    public = {k: v for k, v in found.ident.items() if not k.startswith("_")}
    table = module.load_table()
    assert set(public) <= set(table), sorted(set(public) - set(table))
    assert all(table[k] == v for k, v in public.items())
