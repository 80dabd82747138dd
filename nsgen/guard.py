"""What the tools may write, remove and share.

The tools remove or replace only directories they made: each carries a
marker they wrote (MARKER, or for a git work tree of the baseline its .git
file, which names our baseline repository).  A directory without one is
the user's, and is refused with a one-line error, never deleted.

One run at a time on what runs share: a run holds an exclusive
fcntl.flock() on the per-tree work directory for as long as it runs, and on
OUT while it writes the series there.  A second run waits, saying so in
one line, or with --no-wait refuses at once.  Child processes that a
holder starts (make check runs generate.py many times) inherit the hold
through the environment instead of waiting for their own parent.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
from pathlib import Path
from typing import Callable, Iterator

from .run import ToolError, progress

MARKER = ".ns-series-owned"
LOCK = ".ns-series.lock"
# Paths whose lock a parent process holds for us (os.pathsep-separated).
HELD_ENV = "NS_SERIES_LOCKS_HELD"


def mark(path: Path) -> Path:
    """Create path (if needed) as a directory of the tools, with the marker.

    An existing directory that has other content and no marker is the
    user's: refused."""
    if path.exists() and not path.is_dir():
        raise ToolError(f"{path} exists and is not a directory; choose "
                        "another path")
    if path.is_dir() and not owned(path) and any(
            p.name != LOCK for p in path.iterdir()):
        raise ToolError(f"{path} exists and was not made by these tools "
                        f"(no {MARKER} in it); move it away or choose "
                        "another path")
    try:
        path.mkdir(parents=True, exist_ok=True)
        write_marker(path)
    except OSError as e:
        raise ToolError(f"{path}: cannot write there ({e.strerror}); "
                        "choose a writable directory") from None
    return path


def write_marker(path: Path) -> None:
    """The marker, in a directory the caller just made."""
    (path / MARKER).write_text("made by ns-series (generate.py); the tools "
                               "may replace or remove this directory\n")


def owned(path: Path) -> bool:
    return (path / MARKER).is_file()


SERIES_FILE = re.compile(r"\d{4}-[^/]*\.patch")


def earlier_series(path: Path) -> bool:
    """A series directory that a generate.py from before the markers wrote:
    nothing but NNNN-*.patch files, a cover letter among them whose
    Message-ID is one the generator makes (<ns-series-...>)."""
    try:
        entries = list(path.iterdir())
        cover = path / "0000-cover-letter.patch"
        if not cover.is_file() or not all(
                e.is_file() and not e.is_symlink()
                and SERIES_FILE.fullmatch(e.name) for e in entries):
            return False
        with cover.open(encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return re.search(r"^Message-I[dD]: <ns-series-[0-9a-f]+@", head,
                     re.MULTILINE) is not None


def check_series_dir(path: Path) -> None:
    """Refuse a series directory the generator may not replace: one that
    exists, is not empty and neither carries the marker nor is a series an
    earlier generate.py wrote."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_dir() and not path.is_symlink() and (
            owned(path) or earlier_series(path) or not any(path.iterdir())):
        return
    raise ToolError(f"{path} exists and was not written by generate.py "
                    f"(no {MARKER} in it); move it away or choose another "
                    "OUT")


def worktree_of(dest: Path) -> Path | None:
    """The git directory that dest's .git file names, if dest is a linked
    work tree (git worktree add writes that file before anything else)."""
    dotgit = dest / ".git"
    if not dotgit.is_file():
        return None
    text = dotgit.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return (dest / target if not target.is_absolute() else target).resolve()


def our_worktree(dest: Path, git_dir: Path) -> bool:
    """dest is a work tree of the baseline repository git_dir."""
    admin = worktree_of(dest)
    return admin is not None and admin.parent == \
        (git_dir / "worktrees").resolve()


def remove(path: Path, git_dir: Path | None = None) -> None:
    """Remove a directory the tools made: marked, or a work tree of
    git_dir (git worktree add writes its .git file first, so a check-out
    that an interrupted run left half made is one too).  Anything else is
    refused."""
    if not path.exists() and not path.is_symlink():
        return
    if not (owned(path) or
            (git_dir is not None and our_worktree(path, git_dir))):
        raise ToolError(f"{path} was not made by these tools (no {MARKER}, "
                        "not a work tree of the baseline); refusing to "
                        "remove it: move it away or choose another path")
    shutil.rmtree(path)


def check_writable(path: Path, what: str, create: bool = True) -> Path:
    """Create directory path if missing and prove that files can be
    written in it (a temporary file, removed again).  Without create
    (--dry-run), only ask whether its nearest existing directory could
    take it."""
    path = path.absolute()
    if not create:
        near = path
        while not near.exists() and near != near.parent:
            near = near.parent
        if not near.is_dir() or not os.access(near, os.W_OK | os.X_OK):
            raise ToolError(f"{what}={path}: not writable ({near} is not a "
                            f"writable directory); choose another {what}")
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".ns-series-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ToolError(f"{what}={path}: not writable ({e.strerror}); "
                        f"choose another {what}") from None
    return path


def _held() -> set[str]:
    return {p for p in os.environ.get(HELD_ENV, "").split(os.pathsep) if p}


def held(path: Path) -> bool:
    """This process, or a parent that handed it down, holds path's lock."""
    return str(path.resolve()) in _held()


@contextlib.contextmanager
def locked(path: Path, what: str, wait: bool = True,
           log: Callable[[str], None] = progress) -> Iterator[None]:
    """Hold the lock of directory path (created if missing) for the block.

    Another process holding it: wait, after one line saying so, or with
    wait=False a ToolError at once.  Held by a parent process that handed
    it down (HELD_ENV): nothing to take."""
    path = path.resolve()       # one key for one directory, links or not
    key = str(path)
    if key in _held():
        yield
        return
    check_writable(path, what)
    fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            who = f" (pid {holder})" if holder else ""
            if not wait:
                raise ToolError(f"{what}={path} is in use by another run"
                                f"{who}; wait for it, or use another "
                                f"{what}") from None
            log(f"waiting for another run{who} that holds {path / LOCK}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.environ[HELD_ENV] = os.pathsep.join(sorted(_held() | {key}))
        try:
            yield
        finally:
            rest = _held() - {key}
            if rest:
                os.environ[HELD_ENV] = os.pathsep.join(sorted(rest))
            else:
                os.environ.pop(HELD_ENV, None)
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)
