#!/usr/bin/env python3
"""Wall time of the conversion phase (the ns-string step) on a full tree:
cold (empty spatch cache), warm (same tree again), and a plain grep+sed
converter as the speed anchor.  Prints figures and ratios, no verdicts.

The sed anchor only handles one-line calls of the three base macros; it is
a floor for the cost of touching the files, not a correct converter (its
leftovers are counted and printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nsgen import convert, spatch, tree  # noqa: E402
from nsgen.run import run  # noqa: E402

SED = (r's/\<(EXPORT_SYMBOL_NS|EXPORT_SYMBOL_NS_GPL)\(([^,()]+),[[:space:]]*'
       r'([A-Za-z_][A-Za-z0-9_]*)\)/\1(\2, "\3")/g;'
       r's/\<MODULE_IMPORT_NS\(([A-Za-z_][A-Za-z0-9_]*)\)/MODULE_IMPORT_NS("\1")/g')


def reset(base: tree.Baseline) -> None:
    tree.reset(base.repo, base.commit)


def timed_step(base: tree.Baseline, version: str, jobs: int,
               cache: Path) -> tuple[float, convert.StepResult]:
    reset(base)
    start = time.monotonic()
    result = convert.ns_string(base.repo, "spatch", version, jobs, cache)
    return time.monotonic() - start, result


def sed_anchor(base: tree.Baseline, jobs: int) -> tuple[float, int, int]:
    reset(base)
    start = time.monotonic()
    names = ["EXPORT_SYMBOL_NS", "EXPORT_SYMBOL_NS_GPL", "MODULE_IMPORT_NS"]
    files = convert.git_grep(base.repo, names, "*.c", "*.h")
    chunk = max(1, len(files) // max(1, jobs) + 1)
    groups = [files[i:i + chunk] for i in range(0, len(files), chunk)]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(lambda g: run(["sed", "-i", "-E", SED, *g],
                                    cwd=base.work), groups))
    elapsed = time.monotonic() - start
    changed = len(base.repo.git("diff", "--name-only").split())
    left = run(["git", "grep", "-c", "-E",
                r"(EXPORT_SYMBOL_NS(_GPL)?\([^,]+,\s*[A-Za-z_]\w*\)|"
                r"MODULE_IMPORT_NS\([A-Za-z_]\w*\))", "--", "*.c"],
               cwd=base.work, check=False).stdout
    leftovers = sum(int(x.rsplit(":", 1)[1]) for x in left.split())
    return elapsed, changed, leftovers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ksrc", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    ksrc = tree.check_tree(Path(args.ksrc))
    workdir = Path(args.workdir).resolve() / "bench"
    version = spatch.find_spatch()
    base = tree.make_baseline(ksrc, workdir)
    cache = workdir / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cold, r = timed_step(base, version, args.jobs, cache)
    warm, _ = timed_step(base, version, args.jobs, cache)
    sed, sed_files, sed_left = sed_anchor(base, args.jobs)
    reset(base)
    n = len(r.files)
    print(f"tree: Linux {ksrc.version}, {args.jobs} jobs, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"conversion cold:  {cold:7.1f} s  {n / cold:7.1f} files/s  "
          f"({n} files changed)")
    print(f"conversion warm:  {warm:7.1f} s  {n / warm:7.1f} files/s")
    print(f"grep+sed anchor:  {sed:7.1f} s  {sed_files / sed:7.1f} files/s  "
          f"({sed_files} files changed, {sed_left} one-line calls it left)")
    print(f"ratio cold/warm:  {cold / warm:7.1f}")
    print(f"ratio cold/sed:   {cold / sed:7.1f}")
    print(f"ratio warm/sed:   {warm / sed:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
