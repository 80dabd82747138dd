"""The kernel tree: validate it, and keep a git baseline and a work tree of it
in WORKDIR without ever writing to the input tree."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .run import ToolError, run

# Fixed identity and dates: the same tree gives the same commits and series.
IDENTITY = "NS Series Generator"
EMAIL = "ns-series@example.invalid"
DATE = "2000-01-01T00:00:00+0000"

# git settings that the user's configuration must not change.
GIT_OVERRIDES = (
    "-c", "core.autocrlf=false", "-c", "core.excludesFile=/dev/null",
    "-c", "core.abbrev=12", "-c", "diff.algorithm=myers",
    "-c", "diff.renames=false", "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "-c", "format.signature=", "-c", "format.numbered=auto",
    "-c", "format.coverLetter=false", "-c", "format.suffix=.patch",
    "-c", "commit.gpgSign=false", "-c", "gc.auto=0",
    "-c", "core.quotePath=true", "-c", "i18n.commitEncoding=UTF-8",
    "-c", "user.useConfigOnly=false", "-c", "core.hooksPath=/dev/null",
    "-c", "advice.detachedHead=false", "-c", "init.defaultBranch=main",
    "-c", "core.fsmonitor=false",
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": IDENTITY, "GIT_AUTHOR_EMAIL": EMAIL,
    "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_NAME": IDENTITY,
    "GIT_COMMITTER_EMAIL": EMAIL, "GIT_COMMITTER_DATE": DATE,
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
    "LC_ALL": "C", "TZ": "UTC",
}

def sender_env(name: str, email: str, date: str) -> dict[str, str]:
    """git's identity and dates for the series' commits (the baseline keeps
    the fixed ones above: it stands for the input tree)."""
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date}


def default_workdir() -> Path:
    """Where the baseline, work trees, caches and builds go: $WORKDIR, else
    $XDG_CACHE_HOME/ns-series, else ~/.cache/ns-series.  The Makefile asks
    generate.py for it, so that this is the only place that says so."""
    if os.environ.get("WORKDIR"):
        return Path(os.environ["WORKDIR"])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "ns-series"


REQUIRED = ("Makefile", "include/linux/export.h", "include/linux/module.h",
            "kernel/module/main.c", "scripts/mod/modpost.c")


@dataclass(frozen=True)
class KernelTree:
    path: Path
    version: str          # make kernelversion, read from the Makefile


def check_tree(path: Path) -> KernelTree:
    """Fail with a one-line error unless path is a kernel source tree."""
    if not path.is_dir():
        raise ToolError(f"KSRC={path}: no such directory; point KSRC at a "
                        "kernel source tree")
    missing = [f for f in REQUIRED if not (path / f).is_file()]
    if missing:
        raise ToolError(f"KSRC={path} is not a kernel source tree "
                        f"(no {missing[0]}); point KSRC at one")
    head = (path / "Makefile").read_text(errors="replace")[:2000]
    parts = {}
    for key in ("VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION"):
        m = re.search(rf"^{key}\s*=\s*(\S*)\s*$", head, re.M)
        parts[key] = m.group(1) if m else ""
    if not parts["VERSION"]:
        raise ToolError(f"KSRC={path}: cannot read the kernel version from "
                        "its Makefile")
    version = "{VERSION}.{PATCHLEVEL}.{SUBLEVEL}{EXTRAVERSION}".format(**parts)
    return KernelTree(path.resolve(), version)


def package_of(ksrc: KernelTree) -> str:
    """'linux-source-X VERSION' when setup.sh unpacked the tree from that
    Debian package (it leaves DIR.package next to the tree), else ''."""
    side = ksrc.path.parent / f"{ksrc.path.name}.package"
    lines = side.read_text().split("\n") if side.is_file() else [""]
    return lines[0].strip()


class Repo:
    """git with this project's fixed settings, in one work tree."""

    def __init__(self, git_dir: Path, work_tree: Path | None = None) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        # Overrides of GIT_ENV for this repository's commits (the sender).
        self.env: dict[str, str] = {}

    def git(self, *args: str, timeout: float = 900, check: bool = True,
            stdin: str | None = None, merge_stderr: bool = False) -> str:
        cmd = ["git", *GIT_OVERRIDES, f"--git-dir={self.git_dir}"]
        if self.work_tree is not None:
            cmd.append(f"--work-tree={self.work_tree}")
        proc = run([*cmd, *args], cwd=self.work_tree or self.git_dir,
                   env={**GIT_ENV, **self.env}, timeout=timeout, check=check,
                   stdin=stdin)
        return proc.stdout + proc.stderr if merge_stderr else proc.stdout


@dataclass(frozen=True)
class Baseline:
    commit: str
    tree: str
    work: Path            # the work tree, checked out at commit
    repo: Repo


def snapshot(ksrc: KernelTree, workdir: Path) -> tuple[Repo, str, str]:
    """Snapshot ksrc into WORKDIR/baseline.git; return (repo, commit, tree).

    The input tree is only read: git runs with its own git directory and
    index, and the input tree as work tree.  A second run on the same tree
    finds the index up to date and takes well under a second.
    """
    git_dir = workdir / "baseline.git"
    if not (git_dir / "HEAD").exists():
        workdir.mkdir(parents=True, exist_ok=True)
        run(["git", *GIT_OVERRIDES, "init", "-q", "--bare", str(git_dir)],
            env=GIT_ENV)
    snap = Repo(git_dir, ksrc.path)
    # -f: Debian's tarball has a .gitignore that would hide everything.
    snap.git("add", "-f", "-A", "--", ".")
    tree = snap.git("write-tree").strip()
    commit = snap.git("commit-tree", "-m", f"Linux {ksrc.version}: baseline",
                      tree).strip()
    return snap, commit, tree


def make_baseline(ksrc: KernelTree, workdir: Path) -> Baseline:
    """Snapshot ksrc and check the snapshot out in WORKDIR/work."""
    snap, commit, tree = snapshot(ksrc, workdir)
    git_dir = snap.git_dir
    work = workdir / "work"
    repo = Repo(git_dir / "worktrees" / "work", work)
    if not (work / ".git").exists():
        if work.exists():
            shutil.rmtree(work)
        Repo(git_dir).git("worktree", "prune")
        Repo(git_dir).git("worktree", "add", "-q", "--detach", str(work),
                          commit)
    else:
        reset(repo, commit)
    return Baseline(commit, tree, work, repo)


def reset(repo: Repo, commit: str) -> None:
    """Put a work tree back at commit: no git am in progress, no change,
    no stray file.  Unchanged files keep their timestamps, so build outputs
    that depend on them stay valid."""
    repo.git("am", "--abort", check=False)    # an interrupted earlier run
    repo.git("checkout", "-q", "-f", "--detach", commit)
    repo.git("clean", "-q", "-f", "-d", "-x")


def work_repo(dest: Path) -> Repo:
    """The Repo of an existing work tree of the baseline repository."""
    return Repo(Path(run(["git", "-C", str(dest), "rev-parse",
                          "--absolute-git-dir"]).stdout.strip()), dest)

def attach_worktree(git_dir: Path, commit: str, dest: Path) -> Repo:
    """A work tree of the baseline repository at dest, reset to commit
    (made if missing; an existing one keeps its unchanged files)."""
    if not (dest / ".git").exists():
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        Repo(git_dir).git("worktree", "prune")
        Repo(git_dir).git("worktree", "add", "-q", "--detach", str(dest),
                          commit)
    repo = work_repo(dest)
    reset(repo, commit)
    return repo
