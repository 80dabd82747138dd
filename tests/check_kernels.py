#!/usr/bin/env python3
"""Regenerate the series on every linux-source version of a list
(tests/kernels.list: what Debian served when it was written), one after
the other, and print a table by Debian version.

For each version: is it still served, with the sha256 the list has; the
tree fetched and unpacked (setup.sh source VERSION); the series generated
(each hand-written step's decision read from generate's log); the series
applied with git am (generate.py apply); the patched loader and modpost
compiled (kernel/module/ and scripts/mod/ of a defconfig with KUnit and
module signing).  A version no longer served is reported, not failed.
Trees this run unpacked, and their work directories, are removed after
their row unless --keep (disk: a tree is about 1.7 GB, its work directory
2 to 4 GB while it is checked); the spatch results are shared between the
versions (keyed by content).

TAP lines, the table (Markdown) and 'N passed, N failed' last.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "tests"))

import check  # noqa: E402
from nsgen import kbuild  # noqa: E402

STEP_RE = re.compile(r"^  (\d{4})-[^:]*\.patch: (.*)$", re.M)
SHORT = (("applies in the variant", "variant"),
         ("applies with drift", "drift"), ("already in this tree", "already"),
         ("applies", "applies"), ("refused", "refused"))


@dataclass
class Listed:
    package: str
    version: str
    sha256: str
    suites: str


@dataclass
class Row:
    listed: Listed
    suites: str = ""
    steps: list[str] = field(default_factory=list)
    applies: str = "-"
    builds: str = "-"
    seconds: float = 0.0
    status: str = ""        # '' passed, 'not served', else what failed


def read_list(path: Path) -> list[Listed]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pkg, version, sha, suites = line.split()
            out.append(Listed(pkg, version, sha, suites))
    return out


def served(src: Path) -> dict[str, tuple[str, str]]:
    """version -> (sha256, suites) of what Debian serves today."""
    p = check.sh([str(PROJECT / "setup.sh"), "versions", str(src)], 900)
    if p.returncode != 0:
        raise SystemExit(f"check_kernels.py: setup.sh versions failed: "
                         f"{p.stdout.strip().splitlines()[-1:]}")
    out = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].startswith("linux-source-"):
            out[parts[1]] = (parts[2], parts[3])
    return out


def step_word(decision: str) -> str:
    """The short form of a step's decision for the table."""
    m = re.match(r"applies in the variant (\S+?)[,:]", decision + ":")
    for long, short in SHORT:
        if decision.startswith(long):
            word = f"variant {m.group(1)}" if m and short == "variant" \
                else short
            if "with drift" in decision and short == "variant":
                word += "+drift"
            if "fuzz" in decision:
                word += " (fuzz)"
            return word
    return decision.split(":")[0]


def check_one(args: argparse.Namespace, item: Listed,
              now: dict[str, tuple[str, str]]) -> Row:
    row = Row(item)
    start = time.monotonic()
    if item.version not in now:
        row.status = "not served"
        return row
    sha, row.suites = now[item.version]
    if sha != item.sha256:
        row.status = f"served with sha256 {sha[:12]}, the list has " \
            f"{item.sha256[:12]}"
        return row
    src = Path(args.src_dir)
    before = {p.name for p in src.glob("linux-source-*")}
    p = check.sh([str(PROJECT / "setup.sh"), "source", item.version,
                  str(src)], 1800)
    if p.returncode != 0:
        row.status = "fetch: " + (p.stdout.strip().splitlines() or ["?"])[-1]
        return row
    name = f"linux-source-{item.version}"
    if not (src / name / "Makefile").is_file():
        line = item.package.removeprefix("linux-source-")
        name = f"linux-source-{line}"        # unpacked earlier as N.M
    workdir = Path(args.workdir_root) / name
    fresh_workdir = not workdir.exists()
    full = check.Full(args, str(src / name), str(workdir),
                      str(Path(args.out) / name))
    try:
        error = full.generate()
        row.steps = [f"{n} {step_word(d)}"
                     for n, d in STEP_RE.findall(full.log)]
        if error is not None:
            row.status = "generate: " + error
            return row
        error = full.applies()
        row.applies = "no" if error else "yes"
        if error is not None:
            row.status = "git am: " + error
            return row
        error = full.objects()
        row.builds = "no" if error else "yes"
        if error is not None:
            row.status = "build: " + error
        return row
    finally:
        row.seconds = time.monotonic() - start
        if not args.keep:
            if name not in before:
                shutil.rmtree(src / name, ignore_errors=True)
                (src / f"{name}.package").unlink(missing_ok=True)
            if fresh_workdir:
                shutil.rmtree(workdir, ignore_errors=True)


def table(rows: list[Row]) -> list[str]:
    out = ["| Debian version | suite | steps 0001–0006 | applies | "
           "loader+modpost build | time | result |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"| {r.listed.version} | {r.suites or r.listed.suites} | "
            f"{'; '.join(r.steps) or '-'} | {r.applies} | {r.builds} | "
            f"{r.seconds:.0f} s | {r.status or 'ok'} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", default=str(PROJECT / "tests/kernels.list"))
    ap.add_argument("--src-dir", required=True,
                    help="where setup.sh unpacks the trees")
    ap.add_argument("--workdir-root", required=True,
                    help="the work directories go to ROOT/linux-source-V")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cc-wrapper", default=kbuild.AUTO)
    ap.add_argument("--only", default="",
                    help="comma-separated Debian versions of the list")
    ap.add_argument("--keep", action="store_true",
                    help="keep the trees and work directories")
    args = ap.parse_args(argv)
    args.base_desc = ""
    # the cache make's series use (keyed by content)
    args.cache = str(Path(args.workdir_root) / "cache")
    items = read_list(Path(args.list))
    if args.only:
        want = set(args.only.split(","))
        items = [i for i in items if i.version in want]
        if not items:
            ap.error(f"--only {args.only}: no such version in {args.list}")
    print("TAP version 13", flush=True)
    now = served(Path(args.src_dir))
    rows = []
    for n, item in enumerate(items, 1):
        r = check_one(args, item, now)
        rows.append(r)
        ok = r.status in ("", "not served")
        print(f"{'ok' if ok else 'not ok'} {n} - {item.package} "
              f"{item.version}: {r.status or 'regenerates, applies, builds'}"
              f" ({r.seconds:.0f} s)", flush=True)
    new = sorted(set(now) - {i.version for i in read_list(Path(args.list))})
    if new and not args.only:
        print(f"# served but not in {Path(args.list).name}: "
              f"{', '.join(new)} ('make kernels-list' adds them)")
    for line in table(rows):
        print(f"# {line}")
    table_file = Path(args.out) / "kernels.md"
    table_file.parent.mkdir(parents=True, exist_ok=True)
    table_file.write_text("\n".join(table(rows)) + "\n")
    failed = sum(1 for r in rows if r.status not in ("", "not served"))
    passed = sum(1 for r in rows if r.status == "")
    print(f"# {sum(1 for r in rows if r.status == 'not served')} no longer "
          f"served; table in {table_file}")
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
