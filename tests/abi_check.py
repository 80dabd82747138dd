#!/usr/bin/env python3
"""generate.py abi-check on the series, and on the series with a deliberate
ABI break on top: the check must pass on the first and fail on each break,
naming it.

  tests/abi_check.py --ksrc PRISTINE --workdir WORKDIR [--series DIR]
                     [--out DIR] [--jobs N]

The series (default out/series) must have been generated; each run's
result goes to --out/NAME (default out/abi-check/NAME), as make abi-check
writes OUT/abi.  The breaks are commits made in
WORKDIR/abi-mutant (a work tree of the baseline), on top of the series:

- a member added in the middle of struct module (genksyms and the layout);
- a prototype in <linux/module.h> changed (genksyms);
- a member added at the end of struct module but hidden from genksyms with
  #ifndef __GENKSYMS__ (the layout only: the size changes).

TAP on stdout; the last line is 'N passed, N failed'.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable, NamedTuple, Optional, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "tests")]

import scratch_tree  # noqa: E402
from nsgen import abi, kbuild, verify  # noqa: E402
from nsgen.tree import attach_worktree  # noqa: E402

MODULE_H = "include/linux/module.h"


class Break(NamedTuple):
    name: str
    pattern: str
    replacement: str
    crc: Optional[str]        # a CRC change that must be reported
    layout: Optional[str]     # a layout change that must be reported


BREAKS = (
    Break("member-in-struct-module",
          r"(\n\tenum module_state state;\n)",
          r"\1\tchar abi_mutant[64];\n",
          "struct module", "module: member"),
    Break("prototype-changed",
          r"\nint register_module_notifier\(struct notifier_block \*nb\);",
          "\nint register_module_notifier(struct notifier_block *nb, "
          "int abi_mutant);",
          "register_module_notifier", None),
    Break("hidden-member-grows-struct-module",
          r"\n(\} ____cacheline_aligned __randomize_layout;)",
          "\n#ifndef __GENKSYMS__\n\tchar abi_mutant[64];\n#endif\n\\1",
          None, "module: size"),
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = scratch_tree.parse(__doc__, "abi-check", argv)
    args, ksrc, workdir, out = a.args, a.ksrc, a.workdir, a.out
    wrapper, _ = kbuild.resolve_wrapper(args.cc_wrapper)
    make = verify.Make(args.jobs, wrapper)
    log: Callable[[str], None] = lambda s: print(f"    # {s}", flush=True)
    repo, base, head = abi.series_revs(ksrc, workdir, Path(args.series))
    git_dir = workdir / "baseline.git"
    print("TAP version 13")
    print(f"1..{1 + len(BREAKS)}")
    passed = failed = 0

    def verdict(n: int, ok: bool, what: str, detail: str = "") -> None:
        nonlocal passed, failed
        print(f"{'ok' if ok else 'not ok'} {n} - {what}"
              f"{': ' + detail if detail and not ok else ''}", flush=True)
        passed += ok
        failed += not ok

    r = abi.check_revs(repo, git_dir, workdir, base, head, make, log)
    abi.write(r, out / "series")
    verdict(1, r.kept, f"the series keeps the module ABI ({r.exports} "
            f"expansions, {r.layouts} layouts)", abi.summary(r))
    mutant = attach_worktree(git_dir, head, workdir / "abi-mutant")
    assert mutant.work_tree is not None
    for n, b in enumerate(BREAKS, 2):
        mutant.git("checkout", "-q", "-f", "--detach", head)
        path = mutant.work_tree / MODULE_H
        text, count = re.subn(b.pattern, b.replacement, path.read_text(),
                              count=2)
        if count != 1:
            verdict(n, False, b.name, f"{b.pattern!r} matches {count} "
                    f"times in {MODULE_H}")
            continue
        path.write_text(text)
        mutant.git("-c", "user.name=abi check", "-c",
                   "user.email=abi-check@invalid", "commit", "-q", "-a",
                   "-m", f"abi mutant: {b.name}")
        top = mutant.git("rev-parse", "HEAD").strip()
        r = abi.check_revs(mutant, git_dir, workdir, base, top, make, log)
        abi.write(r, out / b.name)
        problems = []
        if r.kept:
            problems.append("the check passed")
        if b.crc and not any(b.crc in c for c in r.crc_changes):
            problems.append(f"no CRC change naming {b.crc}")
        if b.layout and not any(b.layout in c for c in r.layout_changes):
            problems.append(f"no layout change naming {b.layout}")
        if not b.layout and r.layout_changes:
            problems.append("a layout change reported for a prototype")
        verdict(n, not problems, f"{b.name} is found ("
                f"{len(r.crc_changes)} CRC, {len(r.layout_changes)} layout "
                "changes)", "; ".join(problems) + "\n" + abi.summary(r))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
