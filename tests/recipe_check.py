#!/usr/bin/env python3
"""The treewide commit's recipe, run from its message alone: on a work tree
of the tree before the conversion (the parent of its first part, where it
comes in parts), the script its (last) message carries must give the
conversion's tree byte for byte.

  tests/recipe_check.py --ksrc PRISTINE --workdir WORKDIR [--series DIR]

The series (default out/series) must have been generated.  The recipe is
read from the mail (as a maintainer gets it) and from the commit git am
makes of it (as git log shows it): the two must be the same.  It runs in
WORKDIR/recipe, a work tree of the baseline at the parent commit, with
nothing of this project on its way: sh, git, spatch and sed.

TAP on stdout; the last line is 'N passed, N failed'.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "tests")]

import scratch_tree  # noqa: E402
from nsgen import convert, recipe, verify  # noqa: E402
from nsgen.verify import patch_subject  # noqa: E402
from nsgen.series import patch_files  # noqa: E402
from nsgen.tree import attach_worktree  # noqa: E402


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = scratch_tree.parse(__doc__, "recipe-check", argv)
    ksrc, workdir, series = a.ksrc, a.workdir, a.series
    mails = [p for p in patch_files(series)
             if convert.is_ns_string(patch_subject(p))]
    print("TAP version 13")
    if not mails:
        print("1..0 # SKIP the series has no treewide commit (the tree "
              "was converted already)")
        print("0 passed, 0 failed")
        return 0
    print("1..2")
    am = verify.apply_series(ksrc, workdir, series,
                             verify.conversion_subject(series))
    commit, parent, _ = verify.find_conversion(am)
    message = am.git("log", "-1", "--format=%B", commit)
    passed = failed = 0

    def verdict(n: int, ok: bool, what: str, detail: str = "") -> None:
        nonlocal passed, failed
        print(f"{'ok' if ok else 'not ok'} {n} - {what}")
        for line in detail.rstrip("\n").split("\n") if detail else []:
            print(f"    # {line}")
        passed += ok
        failed += not ok

    try:
        script = recipe.extract(message)
        from_mail = recipe.extract(mails[-1].read_text(
            encoding="utf-8", errors="surrogateescape"))
        verdict(1, script == from_mail, "the recipe in the mail is the one "
                "in the commit", f"{mails[-1].name}: "
                f"{len(script.splitlines())} lines")
    except ValueError as e:
        verdict(1, False, "the recipe in the mail is the one in the commit",
                str(e))
        print(f"{passed} passed, {failed} failed")
        return 1
    work = attach_worktree(workdir / "baseline.git", parent,
                           workdir / "recipe")
    assert work.work_tree is not None
    t = time.monotonic()
    run = subprocess.run(["sh", "-e"], input=script, text=True,
                         cwd=work.work_tree, capture_output=True,
                         env={**os.environ, "LC_ALL": "C"})
    elapsed = time.monotonic() - t
    if run.returncode != 0:
        verdict(2, False, "the recipe gives the commit's tree",
                f"sh exited {run.returncode} after {elapsed:.0f} s:\n"
                + run.stderr[-2000:])
    else:
        work.git("add", "-f", "-A", "--", ".")
        got = work.git("write-tree").strip()
        want = am.git("rev-parse", f"{commit}^{{tree}}").strip()
        detail = f"{elapsed:.0f} s in {work.work_tree}"
        if got != want:
            detail += "\n" + work.git("diff", "--stat=100", want, got)[-3000:]
        verdict(2, got == want, "the recipe gives the commit's tree byte "
                "for byte", detail)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
