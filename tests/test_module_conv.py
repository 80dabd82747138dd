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


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    """generate.py module ARGS, as a user runs it."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, str(PROJECT / "generate.py"),
                           "module", *args], capture_output=True, text=True,
                          env=env)


def module_dir(tmp_path: Path) -> Path:
    """The fixtures' inputs, as a module's source directory."""
    src = tmp_path / "mod"
    shutil.copytree(FIXTURES, src)
    for p in src.glob("*.res"):
        p.unlink()
    return src


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root: its bytes and its permission bits."""
    return {p.relative_to(root).as_posix():
            (p.read_bytes(), p.stat().st_mode & 0o7777)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_cli_diff_then_in_place(tmp_path: Path) -> None:
    src = module_dir(tmp_path)
    p = generate(str(src))
    assert p.returncode == 1, p.stderr
    assert "+++ b/imports.c" in p.stdout and "+++ b/portable.c" not in p.stdout
    assert "imports.c:6: MODULE_IMPORT_NS(DMA_BUF)" in p.stderr
    assert (src / "imports.c").read_text() == \
        (FIXTURES / "imports.c").read_text()
    p = generate(str(src), "--in-place")
    assert p.returncode == 1, p.stderr
    for name in INPUTS:
        assert (src / name).read_text() == expected(name).read_text(), name
    p = generate(str(src))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and "0 file(s) to change" in p.stderr


def test_missing_directory(tmp_path: Path) -> None:
    p = generate(str(tmp_path / "none"))
    assert p.returncode == 2
    assert p.stderr == f"generate.py: error: {tmp_path / 'none'}: " \
        "not a directory\n"


def test_exit_status_warnings_alone_are_0(tmp_path: Path) -> None:
    """As diff(1): 0 when nothing is to change, warnings or not."""
    shutil.copy(FIXTURES / "warnings.c", tmp_path)
    p = generate(str(tmp_path))
    assert (p.returncode, p.stdout) == (0, "")
    assert "warnings.c:6: warning: " in p.stderr
    assert p.stderr.rstrip().endswith(
        "0 file(s) to change, 0 change(s), 2 warning(s)")
    p = generate(str(tmp_path), "--in-place")
    assert (p.returncode, p.stdout) == (0, "")


def test_help_gives_the_exit_status() -> None:
    p = generate("--help")
    assert p.returncode == 0
    text = " ".join(p.stdout.split())
    assert "0 nothing to change" in text and "2 an error" in text
    assert "warnings alone" in text


def test_in_place_keeps_each_files_mode(tmp_path: Path) -> None:
    src = module_dir(tmp_path)
    (src / "imports.c").chmod(0o640)
    (src / "exports.c").chmod(0o755)
    p = generate(str(src), "--in-place")
    assert p.returncode == 1, p.stderr
    assert (src / "imports.c").stat().st_mode & 0o7777 == 0o640
    assert (src / "exports.c").stat().st_mode & 0o7777 == 0o755
    assert (src / "imports.c").read_text() == expected("imports.c").read_text()
    assert sorted(p.name for p in src.iterdir()) == sorted(INPUTS)


def test_in_place_read_only_file_rewrites_none(tmp_path: Path) -> None:
    """A file its author made read-only (no write bit) is refused, even
    by root, and then no file is rewritten."""
    src = module_dir(tmp_path)
    (src / "imports.c").chmod(0o444)
    before = snapshot(src)
    p = generate(str(src), "--in-place")
    assert p.returncode == 2
    assert p.stderr == (
        f"generate.py: error: {src / 'imports.c'}: read-only (no write "
        "permission bit; refused even as root), so no file was rewritten: "
        "make it writable (chmod u+w) to convert it\n")
    assert snapshot(src) == before


def test_in_place_read_only_directory_rewrites_none(tmp_path: Path) -> None:
    src = module_dir(tmp_path)
    sub = src / "sub"
    sub.mkdir()
    shutil.copy(FIXTURES / "exports.c", sub)
    before = snapshot(src)
    sub.chmod(0o555)
    try:
        p = generate(str(src), "--in-place")
    finally:
        sub.chmod(0o755)
    assert p.returncode == 2
    assert p.stderr == (
        f"generate.py: error: {sub}: read-only directory (no write "
        "permission bit; refused even as root), so no file was rewritten: "
        "the new files are written beside the old ones first\n")
    assert snapshot(src) == before


def test_in_place_failure_while_writing_rewrites_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure while the new versions are written (a full disk) leaves
    every file as it was and no temporary file behind."""
    src = module_dir(tmp_path)
    before = snapshot(src)
    changed = [r for r in module.convert_dir(src) if r.new != r.old]
    assert len(changed) > 2
    real = module._write_temporary
    calls = []

    def full_disk(target: Path, text: str, like: os.stat_result) -> Path:
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(target, text, like)

    monkeypatch.setattr(module, "_write_temporary", full_disk)
    with pytest.raises(module.ToolError) as e:
        module.write(src, changed)
    assert str(e.value) == (f"{src / changed[1].path}: cannot write its new "
                            "version (No space left on device), so no file "
                            "was rewritten")
    assert snapshot(src) == before


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
