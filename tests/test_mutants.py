"""The mutant runner's reading of results.ktap and its edits."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutants  # noqa: E402
from nsgen.run import ToolError  # noqa: E402

KTAP = """KTAP version 1
1..2
  KTAP version 1
  1..3
  ok 1 kvm_loads_with_irqbypass
  not ok 2 symbol_get_via_worker_refused
  # a diagnostic line
  ok 3 dma_buf_import_loads # SKIP no dma-buf
not ok 1 guest
  KTAP version 1
  1..1
    KTAP version 1
    1..2
    not ok 1 "tuxedo-io" is an offender
    ok 2 "lve" is an offender
  not ok 1 module_is_gpl_offender_test
not ok 2 kunit
"""


def test_failed_leaves_leave_out_suites() -> None:
    assert mutants.failed_leaves(KTAP) == {
        "symbol_get_via_worker_refused", '"tuxedo-io" is an offender'}


def test_mutate_once(tmp_path: Path) -> None:
    m = next(m for m in mutants.MUTANTS if m.name == "symbol-get-unchecked")
    f = tmp_path / m.path
    f.parent.mkdir(parents=True)
    f.write_text("static bool symbol_get_allowed(const struct kernel_symbol"
                 " *sym,\n\t\t\t       struct module *caller)\n{\n"
                 "\treturn !modules || !module_ns_refused(modules, caller, "
                 "sym);\n}\n")
    mutants.mutate(tmp_path, m)
    text = f.read_text()
    assert "module_ns_refused" not in text
    assert "struct module *caller)\n{\n\treturn modules || !modules;\n}" \
        in text


def test_mutate_refuses_a_pattern_not_found(tmp_path: Path) -> None:
    m = mutants.MUTANTS[0]
    f = tmp_path / m.path
    f.parent.mkdir(parents=True)
    f.write_text("nothing here\n")
    with pytest.raises(ToolError, match="matches 0 times"):
        mutants.mutate(tmp_path, m)


@pytest.mark.parametrize("variant", ["", "6.1/", "7.x/"])
def test_patterns_match_the_patches(variant: str) -> None:
    """Each one-line pattern is added by the hand-written patches of every
    kernel variant (the multi-line one is checked on the tree)."""
    patches = Path(__file__).resolve().parent.parent / "patches"
    added = ""
    for n in ("0004", "0005", "0006"):
        found = sorted(patches.glob(f"{variant}{n}-*.patch")) or \
            sorted(patches.glob(f"{n}-*.patch"))
        added += "\n".join(line[1:] for line in found[0].read_text()
                           .splitlines() if line.startswith("+"))
    for m in mutants.MUTANTS:
        if "(?s)" not in m.pattern:
            assert re.search(m.pattern, added), (variant, m.name)
