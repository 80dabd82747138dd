"""The semantic patches against their fixtures (Coccinelle's convention:
cocci/tests/NAME.c in, NAME.res expected out; *_failure is a known gap)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nsgen import convert, macros
from nsgen.spatch import Spatch, find_spatch, run_spatch

FIXTURES = Path(__file__).resolve().parent.parent / "cocci" / "tests"


def ns_names() -> list[str]:
    prelude = FIXTURES / "ns_macros.h"
    return macros.discover([(prelude.name, prelude.read_text())]).names()


def spatch_for(name: str) -> Spatch:
    version = find_spatch()
    if name.startswith("export_for"):
        table = convert.read_table(convert.COCCI / "export_for.table")
        return convert.export_for_spatch("spatch", version, table)
    return convert.ns_string_spatch("spatch", version, ns_names())


def convert_one(src: Path, tmp: Path) -> str:
    work = tmp / "tree"
    work.mkdir(exist_ok=True)
    shutil.copy(src, work / src.name)
    res = run_spatch(spatch_for(src.stem), work, [src.name], tmp / "cache", 1)
    assert not res.failed, res.failed
    return (work / src.name).read_text()


CASES = sorted(p for p in FIXTURES.glob("*.c"))


@pytest.mark.parametrize("src", CASES, ids=[p.stem for p in CASES])
def test_fixture(src: Path, tmp_path: Path) -> None:
    expected = src.with_suffix(".res").read_text()
    got = convert_one(src, tmp_path)
    if src.stem.endswith("_failure"):
        assert got != expected, f"{src.stem} now passes: rename it"
    else:
        assert got == expected


@pytest.mark.parametrize("src", [p for p in CASES
                                 if not p.stem.endswith("_failure")],
                         ids=lambda p: p.stem)
def test_idempotent(src: Path, tmp_path: Path) -> None:
    """The expected result, converted again, comes out unchanged."""
    res = src.with_suffix(".res")
    copy = tmp_path / (src.stem + ".c")
    shutil.copy(res, copy)
    assert convert_one(copy, tmp_path) == res.read_text()


def test_every_fixture_has_a_result() -> None:
    assert CASES
    for src in CASES:
        assert src.with_suffix(".res").is_file(), src


@pytest.mark.parametrize("src", [p for p in CASES
                                 if not p.stem.startswith("export_for")],
                         ids=lambda p: p.stem)
def test_inlined_names_give_the_same_result(src: Path,
                                            tmp_path: Path) -> None:
    """The generator runs ns_string.cocci with the macro names inlined
    into its constraints; the file as written (what a reader runs by hand,
    -D ns_macros=...) converts every fixture the same way."""
    version = find_spatch()
    got = {}
    for inline in (True, False):
        work = tmp_path / f"tree-{inline}"
        work.mkdir()
        shutil.copy(src, work / src.name)
        sp = convert.ns_string_spatch("spatch", version, ns_names(), inline)
        assert (sp.cocci == convert.NS_STRING_COCCI) is not inline
        res = run_spatch(sp, work, [src.name], tmp_path / f"cache-{inline}", 1)
        assert not res.failed, res.failed
        got[inline] = (work / src.name).read_text()
    assert got[True] == got[False]


def test_names_inlined_in_every_name_constraint() -> None:
    text = convert.NS_STRING_COCCI.read_text()
    inlined = convert.with_names_inlined(text, ["A_NS", "B"])
    assert "NS_MACROS }" not in inlined.split("@@", 1)[1]
    assert inlined.count('=~ "^(A_NS|B)$";') == \
        len(convert.NAME_CONSTRAINT.findall(text)) == 3   # the report rule too
    with pytest.raises(convert.ToolError):
        convert.with_names_inlined(text, ["A", "B)|(.*"])
