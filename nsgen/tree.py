"""The kernel tree: validate it, and keep a git baseline and a work tree of it
in WORKDIR without ever writing to the input tree."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import guard
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
    # Check-outs of the whole tree write files in parallel.
    "-c", "checkout.workers=0",
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
class GitInput:
    """A KSRC that is the top of a git work tree: what the user sees."""
    head: str                 # HEAD's commit
    head_tree: str            # and its tree
    dirty: tuple[str, ...]    # changed tracked files, untracked not ignored

    def describe(self) -> str:
        """How the cover letter names this base."""
        if self.dirty:
            return (f"HEAD {self.head[:12]} plus local changes in "
                    f"{len(self.dirty)} file(s) (--allow-dirty)")
        return f"HEAD {self.head[:12]}, tree {self.head_tree[:12]}"


@dataclass(frozen=True)
class KernelTree:
    path: Path
    version: str          # make kernelversion, read from the Makefile
    git: GitInput | None = None


# git in the user's own repository: read only.  GIT_OPTIONAL_LOCKS=0 keeps
# 'git status' from refreshing (writing) the user's index.
USER_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
DIRTY_SHOWN = 10


def _user_git(path: Path, *args: str, timeout: float = 600) -> str:
    return run(["git", "-C", str(path), *args], env=USER_GIT_ENV,
               timeout=timeout).stdout


def git_input(path: Path, allow_dirty: bool) -> GitInput | None:
    """The git state of KSRC when it is the top of a git work tree (a tree
    inside some other repository, such as a home directory kept in git, is
    a plain tree); a one-line refusal of local changes unless allowed."""
    if not (path / ".git").exists():
        return None
    top = run(["git", "-C", str(path), "rev-parse", "--show-toplevel"],
              env=USER_GIT_ENV, check=False)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != \
            path.resolve():
        return None
    head = run(["git", "-C", str(path), "rev-parse", "--verify", "-q",
                "HEAD^{commit}"], env=USER_GIT_ENV, check=False)
    if head.returncode != 0:
        raise ToolError(f"KSRC={path} is a git work tree without a commit; "
                        "commit the tree first")
    status = _user_git(path, "status", "--porcelain=v1", "-z",
                       "--untracked-files=all", "--no-renames")
    dirty = tuple(sorted(e[3:] for e in status.split("\0") if len(e) > 3))
    if dirty and not allow_dirty:
        shown = ", ".join(dirty[:DIRTY_SHOWN])
        more = (f" and {len(dirty) - DIRTY_SHOWN} more"
                if len(dirty) > DIRTY_SHOWN else "")
        raise ToolError(f"KSRC={path} has local changes ({shown}{more}): "
                        "the series would not apply to your HEAD; commit or "
                        "stash them, or pass --allow-dirty (ALLOW_DIRTY=1) "
                        "to take them in, said in the cover letter")
    commit = head.stdout.strip()
    tree = _user_git(path, "rev-parse", f"{commit}^{{tree}}").strip()
    return GitInput(commit, tree, dirty)


def check_tree(path: Path, allow_dirty: bool = False) -> KernelTree:
    """Fail with a one-line error unless path is a kernel source tree (and,
    for a git work tree, a clean one unless allow_dirty)."""
    if not str(path):
        raise ToolError("KSRC is empty; point KSRC at a kernel source tree")
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
    return KernelTree(path.resolve(), version,
                      git_input(path.resolve(), allow_dirty))


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
        # More -c settings, after (so over) GIT_OVERRIDES.
        self.config: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """git with the settings and directories of this repository."""
        cmd = ["git", *GIT_OVERRIDES, *self.config,
               f"--git-dir={self.git_dir}"]
        if self.work_tree is not None:
            cmd.append(f"--work-tree={self.work_tree}")
        return cmd

    def git(self, *args: str, timeout: float = 900, check: bool = True,
            stdin: str | None = None, merge_stderr: bool = False) -> str:
        cmd = ["git", *GIT_OVERRIDES, *self.config,
               f"--git-dir={self.git_dir}"]
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
    adopted: bool = False     # the work tree of another work directory


# The first snapshot hashes every file of the tree in parts, two at a time:
# the directories below, each without the ones before it, and the rest.
# Their shares of a kernel's bytes (6.12): drivers/gpu 34 %, the rest of
# drivers 32 %, arch, tools and Documentation 19 %, the rest 15 %; so the
# two processes finish together.  Parts a tree lacks are left out.
PARTS = (("drivers/gpu",), ("drivers",), ("arch", "tools", "Documentation"))


def add_command(force: bool) -> list[str]:
    """The git add of a snapshot: forced for a plain tree (Debian's tarball
    has a .gitignore of '/*' that would hide everything), by the user's own
    ignore rules for a git work tree (build outputs stay out)."""
    return ["add", "-f", "-A"] if force else ["add", "-A"]


def snapshot_repo(ksrc: KernelTree, git_dir: Path,
                  write: bool = True) -> Repo:
    """The baseline repository with ksrc as its work tree; for a git input,
    the user's ignore rules in force (their info/exclude and excludes file
    besides the tree's .gitignore files, which git reads itself; written
    into git_dir unless write is false)."""
    snap = Repo(git_dir, ksrc.path)
    if ksrc.git is not None and not write:
        excludes = git_dir / "info" / "ksrc-excludes"
        snap.config = ("-c", f"core.excludesFile={excludes}")
    elif ksrc.git is not None:
        rules = []
        info = Path(_user_git(ksrc.path, "rev-parse", "--git-path",
                              "info/exclude").strip())
        info = info if info.is_absolute() else ksrc.path / info
        user = run(["git", "-C", str(ksrc.path), "config", "--path",
                    "core.excludesFile"], env=USER_GIT_ENV,
                   check=False).stdout.strip()
        xdg = os.environ.get("XDG_CONFIG_HOME") or \
            str(Path.home() / ".config")
        for f in (info, Path(user or Path(xdg) / "git" / "ignore")):
            if f.is_file():
                rules.append(f.read_text(errors="surrogateescape"))
        excludes = git_dir / "info" / "ksrc-excludes"
        excludes.parent.mkdir(parents=True, exist_ok=True)
        excludes.write_text("\n".join(rules) + "\n",
                            errors="surrogateescape")
        snap.config = ("-c", f"core.excludesFile={excludes}")
    return snap


def _match_user_files(snap: Repo, ksrc: KernelTree) -> None:
    """Make the index hold exactly the files the user's git sees: tracked
    ones (even where an ignore rule matches them) and untracked ones that
    no rule ignores."""
    want = set(_user_git(ksrc.path, "ls-files", "-z", "-c", "-o",
                         "--exclude-standard").split("\0")) - {""}
    want = {f for f in want if os.path.lexists(ksrc.path / f)}
    have = set(snap.git("ls-files", "-z").split("\0")) - {""}
    literal = {**GIT_ENV, "GIT_LITERAL_PATHSPECS": "1"}
    for cmd, paths in ((["rm", "--cached", "-q"], have - want),
                       (["add", "-f"], want - have)):
        if paths:
            run([*snap.argv(), *cmd, "--pathspec-from-file=-",
                 "--pathspec-file-nul"], cwd=snap.work_tree, env=literal,
                stdin="\0".join(sorted(paths)) + "\0")


def _pathspecs(root: Path) -> list[list[str]]:
    """The parts of the first snapshot as pathspecs: each of PARTS' that
    root has, minus the earlier ones, then the rest."""
    parts: list[list[str]] = []
    taken: list[str] = []
    for dirs in PARTS:
        mine = [d for d in dirs if (root / d).is_dir()]
        if mine:
            parts.append([*mine, *(f":(exclude){t}" for t in taken)])
            taken += mine
    return parts + [[".", *(f":(exclude){t}" for t in taken)]]


def _index_entries(path: Path) -> list[tuple[bytes, bytes]]:
    """(name, entry) of each entry of a version 2 index (gitformat-index:
    a 12-byte header, entries of 62 bytes and a NUL-padded name, then
    extensions, which are left out); ValueError for anything else."""
    data = path.read_bytes()
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") != 2:
        raise ValueError(f"{path}: not a version 2 index")
    entries, pos = [], 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        flags = int.from_bytes(data[pos + 60:pos + 62], "big")
        if flags & 0x7000:          # extended, or not stage 0
            raise ValueError(f"{path}: an entry with flags {flags:#x}")
        end = data.index(b"\0", pos + 62)
        size = (end - pos + 8) & ~7
        entries.append((data[pos + 62:end], data[pos:pos + size]))
        pos += size
    return entries


def merge_indexes(parts: list[Path], dest: Path) -> None:
    """One index of the entries of the parts' indexes (disjoint paths),
    each with the stat data git add gave it, so that the next git add
    finds every file up to date instead of hashing it again."""
    entries = sorted(e for p in parts for e in _index_entries(p))
    if any(a[0] == b[0] for a, b in zip(entries, entries[1:])):
        raise ValueError("a path in two parts")
    body = b"DIRC" + (2).to_bytes(4, "big") + \
        len(entries).to_bytes(4, "big") + b"".join(e for _, e in entries)
    tmp = dest.with_name(dest.name + ".merging")
    tmp.write_bytes(body + hashlib.sha1(body).digest())
    tmp.replace(dest)


def _first_add(snap: Repo, force: bool) -> None:
    """git add of the whole tree into an empty index, in parts.

    git add hashes in one thread.  Each part goes into an index of its own,
    two at a time, and the parts' indexes are merged into the real one.
    Same objects and index as one git add."""
    assert snap.work_tree is not None
    parts = _pathspecs(snap.work_tree)
    index = [snap.git_dir / f"index.first-{n}" for n in range(len(parts))]

    def add(n: int) -> None:
        index[n].unlink(missing_ok=True)
        env = {**GIT_ENV, "GIT_INDEX_FILE": str(index[n]),
               "GIT_INDEX_VERSION": "2"}
        run([*snap.argv(), *add_command(force), "--", *parts[n]],
            cwd=snap.work_tree, timeout=900, env=env)

    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(add, range(len(parts))))
        merge_indexes(index, snap.git_dir / "index")
    except ValueError as e:
        raise ToolError(f"the first snapshot's indexes: {e}") from e
    finally:
        for f in index:
            f.unlink(missing_ok=True)


def snapshot(ksrc: KernelTree, workdir: Path,
             borrow: Path | None = None) -> tuple[Repo, str, str]:
    """Snapshot ksrc into WORKDIR/baseline.git; return (repo, commit, tree).

    The input tree is only read: git runs with its own git directory and
    index, and the input tree as work tree.  A second run on the same tree
    finds the index up to date and takes well under a second.  borrow: an
    objects directory a new snapshot repository reads as well (git
    alternates), so that git add writes no object it has already.
    """
    git_dir = workdir / "baseline.git"
    if not (git_dir / "HEAD").exists():
        workdir.mkdir(parents=True, exist_ok=True)
        run(["git", *GIT_OVERRIDES, "init", "-q", "--bare", str(git_dir)],
            env=GIT_ENV)
        if borrow is not None:
            (git_dir / "objects/info/alternates").write_text(
                f"{borrow.resolve()}\n")
    snap = snapshot_repo(ksrc, git_dir)
    force = ksrc.git is None
    message = f"Linux {ksrc.version}: baseline"
    # (a git input's first add is one process: the files its ignore rules
    # hide are put right after it)
    if force and not (git_dir / "index").exists():
        _first_add(snap, force)
    # (after the first add, the files whose stat data changed only)
    snap.git(*add_command(force), "--", ".")
    if ksrc.git is not None:
        _match_user_files(snap, ksrc)
    tree = snap.git("write-tree").strip()
    if ksrc.git is not None and not ksrc.git.dirty and \
            tree != ksrc.git.head_tree:
        raise ToolError(f"the snapshot of {ksrc.path} ({tree[:12]}) is not "
                        f"its HEAD's tree ({ksrc.git.head_tree[:12]}) "
                        "although git status shows no change: a clean or "
                        "smudge filter, or core.fileMode=false over "
                        "changed modes? Check 'git status' there")
    commit = snap.git("commit-tree", "-m", message, tree).strip()
    return snap, commit, tree


def _check_out(git_dir: Path, commit: str, dest: Path) -> None:
    """A new work tree of the baseline repository at dest.  What is there
    already goes only if these tools made it (guard.remove refuses the
    rest): a work tree of git_dir that an interrupted run left half made."""
    guard.remove(dest, git_dir)
    dest.parent.mkdir(parents=True, exist_ok=True)
    Repo(git_dir).git("worktree", "prune")
    Repo(git_dir).git("worktree", "add", "-q", "--detach", str(dest), commit)


def make_baseline(ksrc: KernelTree, workdir: Path,
                  borrow: Path | None = None,
                  donor: Path | None = None) -> Baseline:
    """Snapshot ksrc and check the snapshot out in WORKDIR/work; borrow as
    snapshot() takes it.  donor: the work directory of the last series of
    the same line (an earlier point release), whose work tree a new work
    directory takes over (adopt_work_tree) instead of writing a kernel's
    files anew."""
    git_dir = workdir / "baseline.git"
    work = workdir / "work"
    snap, commit, tree = snapshot(ksrc, workdir, borrow)
    repo = Repo(git_dir / "worktrees" / "work", work)
    adopted = not (work / ".git").exists() and donor is not None and \
        adopt_work_tree(donor, git_dir, commit, work)
    if (work / ".git").exists():
        reset(repo, commit)
    else:
        _check_out(git_dir, commit, work)
    return Baseline(commit, tree, work, repo, adopted)


def adopt_work_tree(donor: Path, git_dir: Path, commit: str,
                    dest: Path) -> bool:
    """Move the work tree of the work directory donor (DONOR/work, of
    DONOR/baseline.git) to dest as a new work tree of git_dir, with the
    donor's index: git then rewrites only the files that differ between
    the two trees (a few hundred between two point releases) instead of
    a kernel's 90,000; the caller's reset() does that.  The donor's next
    run checks its tree out anew.

    False, with nothing changed, where that cannot be done: no such work
    tree, a run in the donor (its lock, held by another process or handed
    down to this one), or another file system."""
    donor_git, old = donor / "baseline.git", donor / "work"
    index = donor_git / "worktrees" / "work" / "index"
    if dest.exists() or not index.is_file() or guard.held(donor) or \
            not guard.our_worktree(old, donor_git):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    if os.stat(old).st_dev != os.stat(dest.parent).st_dev:
        return False
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(guard.locked(donor, "WORKDIR", wait=False,
                                             log=lambda _: None))
        except ToolError:       # a run in the donor: leave it
            return False
        Repo(git_dir).git("worktree", "prune")
        Repo(git_dir).git("worktree", "add", "-q", "--no-checkout",
                          "--detach", str(dest), commit)
        admin = guard.worktree_of(dest)
        assert admin is not None
        # (an interruption from here on leaves two work trees that each
        # index describes: reset() puts back the files one lacks)
        shutil.copyfile(index, admin / "index")
        for entry in sorted(os.listdir(old)):
            if entry != ".git":
                os.rename(old / entry, dest / entry)
        (old / ".git").unlink()
        old.rmdir()
        Repo(donor_git).git("worktree", "prune")
    return True


def reset(repo: Repo, commit: str) -> None:
    """Put a work tree back at commit: no git am in progress, no change,
    no stray file.  Unchanged files keep their timestamps, so build outputs
    that depend on them stay valid."""
    repo.git("am", "--abort", check=False)    # an interrupted earlier run
    repo.git("checkout", "-q", "-f", "--detach", commit)
    repo.git("clean", "-q", "-f", "-d", "-x")


def trees_of_parts(repo: Repo, commit: str,
                   parts: list[list[str] | None]) -> list[str]:
    """The trees of commit with, part after part, files as the index
    stages them (a staged deletion deletes; None: everything staged):
    what 'git commit -- FILES' would commit for each part in turn.  One
    index of their own (the real one is left as it is), read once."""
    changes = repo.git("diff-index", "--cached", "-z", "--no-renames",
                       commit).split("\0")
    staged = {}
    for meta, path in zip(changes[0::2], changes[1::2]):
        _, mode, _, sha, status = meta.lstrip(":").split(" ")
        staged[path] = (f"0 {'0' * len(sha)}\t{path}" if status == "D"
                        else f"{mode} {sha}\t{path}")
    index = Path(repo.git("rev-parse", "--git-path", "index").strip())
    index = index if index.is_absolute() else \
        (repo.work_tree or repo.git_dir) / index
    temp = index.with_name(f"index.parts-{os.getpid()}")
    env = {**GIT_ENV, **repo.env, "GIT_INDEX_FILE": str(temp)}

    def git(*args: str, stdin: str | None = None) -> str:
        return run([*repo.argv(), *args], cwd=repo.work_tree, env=env,
                   stdin=stdin).stdout

    trees = []
    try:
        git("read-tree", commit)
        for files in parts:
            info = [staged[f] for f in (sorted(staged) if files is None
                                        else files) if f in staged]
            if info:
                git("update-index", "-z", "--index-info",
                    stdin="".join(f"{x}\0" for x in info))
            trees.append(git("write-tree").strip())
    finally:
        temp.unlink(missing_ok=True)
    return trees


def work_repo(dest: Path) -> Repo:
    """The Repo of an existing work tree of the baseline repository."""
    return Repo(Path(run(["git", "-C", str(dest), "rev-parse",
                          "--absolute-git-dir"]).stdout.strip()), dest)


def attach_worktree(git_dir: Path, commit: str, dest: Path) -> Repo:
    """A work tree of the baseline repository at dest, reset to commit
    (made if missing; an existing one keeps its unchanged files)."""
    if not guard.our_worktree(dest, git_dir):
        _check_out(git_dir, commit, dest)
    repo = work_repo(dest)
    reset(repo, commit)
    return repo
