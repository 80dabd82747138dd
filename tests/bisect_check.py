#!/usr/bin/env python3
"""Build the boot test's kernel configuration at every step of the series,
incrementally in one build directory, and fail on a step that does not
build or that adds compiler warnings.  ccache keeps the steps cheap: the
conversion leaves most preprocessed files unchanged.

  tests/bisect_check.py --ksrc PRISTINE --workdir W --series out/series
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "boot-test"),
                str(PROJECT / "tests")]

import boot_config  # noqa: E402
import boot_kernel  # noqa: E402
import scratch_tree  # noqa: E402
from nsgen import series  # noqa: E402
from nsgen.run import ToolError  # noqa: E402

WARNING = re.compile(r"^(\S+?):\d+(?::\d+)?: warning: (.*)$", re.M)


def warnings(log: str) -> set[tuple[str, str]]:
    """(file, message) of every compiler warning, line numbers left out."""
    return {(m.group(1), m.group(2).strip()) for m in WARNING.finditer(log)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    scratch_tree.add_arguments(ap, "bisect-check")
    args = ap.parse_args(argv)
    try:
        scratch = scratch_tree.pristine(args, "bisect-check")
        repo, patches = scratch.repo, scratch.patches
        build = boot_kernel.Build.of(scratch.src, scratch.build_dir,
                                     args.jobs, args.cc_wrapper)
    except ToolError as e:
        print(f"bisect-check: error: {e}", file=sys.stderr)
        return 1
    out = Path(args.out).resolve()
    steps = [("baseline", None)] + [(p.name, p) for p in patches]
    baseline_warnings: set[tuple[str, str]] = set()
    passed = failed = 0
    print("TAP version 13")
    print(f"1..{len(steps)}")
    for n, (name, patch) in enumerate(steps, 1):
        start = time.monotonic()
        why = ""
        try:
            if patch is not None:
                series.apply_patch(repo, patch)
            log = out / f"{n:02d}" / "build.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("")
            # Options of later patches are missing from earlier steps: the
            # configuration is checked by the boot test, not here.
            boot_config.configure(build, log)
            boot_kernel.build_kernel(build, log)
            found = warnings(log.read_text(errors="replace"))
            if patch is None:
                baseline_warnings = found
            new = sorted(found - baseline_warnings)
            if new:
                why = f"{len(new)} new warning(s), first {new[0][0]}: {new[0][1]}"
        except ToolError as e:
            why = str(e)
        elapsed = time.monotonic() - start
        if why:
            failed += 1
            print(f"not ok {n} - {name} ({elapsed:.0f} s): {why}", flush=True)
            break
        passed += 1
        print(f"ok {n} - {name} builds ({elapsed:.0f} s)", flush=True)
    failed += len(steps) - passed - failed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
