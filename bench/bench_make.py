#!/usr/bin/env python3
"""Where the time of writing the series goes, cold and warm.

Cold: generate.py with an empty work directory of its own (a new git
baseline, no spatch results, no get_maintainer.pl answers, no recorded
steps; the unpacked kernel tree is the input, as after 'make ksrc').
Warm: generate.py again on that work directory.  Each phase is read from
generate.py's own log lines; every figure is min / median / max over the
runs (quote the median), with the ratio of the median to the target the
project holds itself to (120 s cold, 10 s warm, on a quiet 2-core
machine).  Figures, not verdicts: nothing here fails.

  bench/bench_make.py --ksrc TREE [--cold 3] [--warm 5] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nsgen.run import run  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
TARGETS = {"cold": 120.0, "warm": 10.0}

# generate.py's log lines -> phase names
PHASES = [
    (re.compile(r"^  baseline \S+ in .*: ([\d.]+) s$"), "baseline snapshot"),
    (re.compile(r"^  applied (\S+?)\.patch: ([\d.]+) s$"), "git am (hand-written)"),
    (re.compile(r"^  generated (\S+): .*: ([\d.]+) s$"), "step {}"),
    (re.compile(r"^  get_maintainer\.pl .*: ([\d.]+) s$"), "get_maintainer.pl"),
]


def phases(log: str, wall: float) -> dict[str, float]:
    """{phase: seconds} of one run's log; 'other' is the rest of wall."""
    found: dict[str, float] = {}
    for line in log.splitlines():
        for regex, name in PHASES:
            m = regex.match(line)
            if not m:
                continue
            key = name.format(m.group(1)) if "{}" in name else name
            found[key] = found.get(key, 0.0) + float(m.groups()[-1])
    found["other (cover letter, mail headers, format-patch)"] = \
        max(0.0, wall - sum(found.values()))
    found["total"] = wall
    return found


def one_run(args: argparse.Namespace, workdir: Path, out: Path
            ) -> dict[str, float]:
    start = time.monotonic()
    p = run([sys.executable, str(PROJECT / "generate.py"), "--ksrc",
             args.ksrc, "--workdir", str(workdir), "--out", str(out),
             "--jobs", str(args.jobs), "--history", ""], timeout=3600,
            check=False,
            log=out.parent / "bench-make.log")
    wall = time.monotonic() - start
    if p.returncode != 0:
        raise SystemExit(f"generate.py failed: {p.stdout.strip().splitlines()[-1]}")
    return phases(p.stdout, wall)


def report(kind: str, runs: list[dict[str, float]]) -> None:
    names = list(dict.fromkeys(n for r in runs for n in r))
    print(f"{kind}: {len(runs)} run(s), seconds min / median / max")
    for n in names:
        vals = [r.get(n, 0.0) for r in runs]
        med = statistics.median(vals)
        extra = ""
        if n == "total":
            extra = f"   median/target {med / TARGETS[kind]:.2f} " \
                    f"(target {TARGETS[kind]:.0f} s)"
        print(f"  {n:52} {min(vals):7.1f} {med:7.1f} {max(vals):7.1f}{extra}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ksrc", required=True)
    ap.add_argument("--workdir", default="",
                    help="ignored: the benchmark uses work directories of "
                    "its own (accepted so that 'make' can pass its arguments)")
    ap.add_argument("--cold", type=int, default=3, help="cold runs")
    ap.add_argument("--warm", type=int, default=5, help="warm runs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    print(f"bench_make: {args.ksrc}, --jobs {args.jobs}, {os.cpu_count()} "
          f"cores, load average {os.getloadavg()[0]:.2f} at the start")
    cold: list[dict[str, float]] = []
    warm: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-make-") as tmp:
        base = Path(tmp)
        for i in range(args.cold):
            workdir = base / "wd"
            if workdir.exists():
                shutil.rmtree(workdir)
            run(["sync"])
            cold.append(one_run(args, workdir, base / "out"))
            print(f"  cold run {i + 1}: {cold[-1]['total']:.1f} s", flush=True)
        for i in range(args.warm):
            warm.append(one_run(args, base / "wd", base / "out"))
            print(f"  warm run {i + 1}: {warm[-1]['total']:.1f} s", flush=True)
    if cold:
        report("cold", cold)
    if warm:
        report("warm", warm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
