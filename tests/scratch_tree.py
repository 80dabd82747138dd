"""What the slow scripts that build the series in a tree of their own share
(tests/bisect_check.py, tests/mutants.py): their command-line arguments and
a work tree of the pristine baseline in WORKDIR/NAME/applied, beside
WORKDIR/NAME/build-boot-test.  That is the boot test's layout one level
down, so that with CCACHE_BASEDIR the compiler sees the same relative paths
and ccache reuses the boot test's objects."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from nsgen import kbuild, series, tree
from nsgen.tree import Repo

PROJECT = Path(__file__).resolve().parent.parent


def add_arguments(ap: argparse.ArgumentParser, name: str) -> None:
    """--ksrc, --workdir, --series, --out (default out/NAME), --jobs and
    --cc-wrapper."""
    ap.add_argument("--ksrc", required=True, help="pristine kernel tree")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--series", default=str(PROJECT / "out" / "series"))
    ap.add_argument("--out", default=str(PROJECT / "out" / name))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cc-wrapper", default=kbuild.AUTO,
                    help="compiler wrapper (default: ccache if installed)")


@dataclass
class Parsed:
    args: argparse.Namespace
    ksrc: tree.KernelTree   # the pristine tree, checked
    workdir: Path           # resolved
    series: Path
    out: Path


def parse(doc: str, name: str, argv: Sequence[str] | None) -> Parsed:
    """The common arguments of the slow scripts (add_arguments), parsed and
    checked: a one-line refusal of a KSRC that is not a clean kernel tree."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_arguments(ap, name)
    args = ap.parse_args(argv)
    return Parsed(args, tree.check_tree(Path(args.ksrc).resolve(), False),
                  Path(args.workdir).resolve(), Path(args.series),
                  Path(args.out))


@dataclass
class Scratch:
    repo: Repo              # the work tree, at the pristine baseline
    src: Path
    build_dir: Path
    patches: list[Path]     # the series' patches, in order, not applied


def pristine(args: argparse.Namespace, name: str) -> Scratch:
    """The work tree WORKDIR/NAME/applied reset to the pristine baseline."""
    ksrc = tree.check_tree(Path(args.ksrc))
    workdir = Path(args.workdir).resolve()
    patches = series.patch_files(Path(args.series))
    _, commit, _ = tree.snapshot(ksrc, workdir)
    home = workdir / name
    src = home / "applied"
    repo = tree.attach_worktree(workdir / "baseline.git", commit, src)
    return Scratch(repo, src, home / "build-boot-test", patches)
