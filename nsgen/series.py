"""The order file, and writing the finished commits out as a series."""

from __future__ import annotations

import email.utils
import os
import re
import shutil
import signal
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

from . import guard
from .identity import Sender
from .run import ToolError
from .tree import Repo


@dataclass(frozen=True)
class Entry:
    """One line of patches/series."""
    kind: str          # "patch" or "generate"
    name: str          # file name of a patch, or the step's name


def read_order(path: Path, steps: set[str]) -> list[Entry]:
    """Parse the order file; unknown steps and missing patches are errors."""
    entries: list[Entry] = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"generate:\s*(\S+)", line)
        if m:
            if m.group(1) not in steps:
                raise ToolError(f"{path}:{n}: unknown step {m.group(1)!r} "
                                f"(known: {', '.join(sorted(steps))})")
            entries.append(Entry("generate", m.group(1)))
        else:
            if not (path.parent / line).is_file():
                raise ToolError(f"{path}:{n}: {line} does not exist")
            entries.append(Entry("patch", line))
    return entries


def patch_files(series_dir: Path) -> list[Path]:
    """The patches of a written series in order, without the cover letter;
    an error if there are none."""
    patches = sorted(p.resolve() for p in series_dir.glob("*.patch")
                     if not p.name.startswith("0000-"))
    if not patches:
        raise ToolError(f"{series_dir}: no patches; run 'make' first")
    return patches


def apply_check(repo: Repo, patch: Path) -> str | None:
    """None if git apply --check accepts patch on the work tree; else where
    it fails: ' at FILE', or '' when git names no file."""
    detail = repo.git("apply", "--check", str(patch.resolve()), check=False,
                      merge_stderr=True)
    if "error" not in detail:
        return None
    m = re.search(r"patch failed: (\S+?)(:\d+)?$", detail, re.M) or \
        re.search(r"error: (\S+): (does not exist|already exists)", detail)
    return f" at {m.group(1)}" if m else ""


def with_author(text: str, ident: str, date: str) -> str:
    """A stored patch with From: and Date: headers: the sender's, where the
    patch has no author of its own."""
    head, sep, rest = text.partition("\n\n")
    if re.search(r"^From: ", head, re.M):
        return text
    lines = head.split("\n")
    at = 1 if lines and lines[0].startswith("From ") else 0
    when = email.utils.format_datetime(datetime.fromisoformat(date))
    lines[at:at] = [f"From: {ident}", f"Date: {when}"]
    return "\n".join(lines) + sep + rest


def am_args(sender: Sender | None) -> list[str]:
    """git am as apply_patch() runs it (the patch file follows)."""
    args = ["am", "--keep-cr", "-q", "--committer-date-is-author-date"]
    return args + ["-s"] if sender is not None and sender.signed else args


def format_patch_args(base: str, dest: Path,
                      extra: Sequence[str] = ()) -> list[str]:
    """git format-patch as format_series() runs it (extra: the version's
    subject prefix, In-Reply-To)."""
    return ["format-patch", "-q", "--zero-commit", "--no-signature",
            "--cover-letter", "--no-binary", "--stat=80", "--summary",
            *extra, "-o", str(dest), f"{base}..HEAD"]


def apply_patch(repo: Repo, patch: Path, sender: Sender | None = None,
                date: str = "") -> None:
    """git am one hand-written patch; name the patch and file if it fails.

    With a sender, a patch stored without an author gets the sender as its
    author and date as its date, and a signed sender signs it off (git am
    -s: after the original author's sign-off where there is one)."""
    patch = patch.resolve()     # git runs in the work tree
    args = am_args(sender)
    tmp: Path | None = None
    if sender is not None:
        text = patch.read_text(encoding="utf-8", errors="surrogateescape")
        authored = with_author(text, sender.ident(), date)
        if authored != text:
            fd, name = tempfile.mkstemp(suffix=".patch")
            os.close(fd)
            tmp = Path(name)
            tmp.write_text(authored, encoding="utf-8",
                           errors="surrogateescape")
    try:
        repo.git(*args, str(tmp or patch))
    except ToolError as e:
        am_error = str(e)
        repo.git("am", "--abort", check=False)
        where = apply_check(repo, patch)
        if where is None:
            raise ToolError(f"git am {patch.name} failed: {am_error}") from None
        raise ToolError(f"{patch.name} does not apply{where}: the kernel has "
                        "changed there; refresh the patch for this tree") \
            from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def format_series(repo: Repo, base: str, out: Path, cover_subject: str,
                  cover_body: str,
                  finish: Callable[[list[Path]], None] | None = None,
                  extra: Sequence[str] = ()) -> list[Path]:
    """Write base..HEAD to out/ with a cover letter, atomically; finish, if
    given, rewrites the files (the cover letter first) before they move in.

    The series is written next to out and moved into place at the end, so an
    interrupted run never leaves a half-written series behind.
    """
    guard.check_series_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        tmp.mkdir()
        if not repo.git("rev-list", f"{base}..HEAD").strip():
            guard.write_marker(tmp)
            _replace(tmp, out)
            return []
        repo.git(*format_patch_args(base, tmp, extra))
        files = sorted(tmp.iterdir())
        cover = files[0]
        text = cover.read_text()
        if "*** SUBJECT HERE ***" not in text or "*** BLURB HERE ***" not in text:
            raise ToolError("git format-patch wrote an unexpected cover letter")
        text = text.replace("*** SUBJECT HERE ***", cover_subject)
        text = text.replace("*** BLURB HERE ***", cover_body.rstrip("\n"))
        cover.write_text(short_diffstat(text))
        if finish is not None:
            finish(files)
        guard.write_marker(tmp)
        _replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return sorted(p for p in out.iterdir() if p.name != guard.MARKER)


STAT_LINE = re.compile(r"^ \S.*\|\s+(\d+ [+-]*|Bin .*)$")
STAT_TOTAL = re.compile(r"^ \d+ files? changed")


def short_diffstat(cover: str) -> str:
    """The cover letter with format-patch's diffstat cut to its total line
    when it is long (a treewide series lists hundreds of files; each patch
    keeps its own)."""
    lines = cover.split("\n")
    stat = [i for i, line in enumerate(lines) if STAT_LINE.match(line)]
    total = next((i for i, line in enumerate(lines)
                  if STAT_TOTAL.match(line)), None)
    if len(stat) <= 40 or total is None:
        return cover
    lines[stat[0]:total] = [f" ({len(stat)} files; each patch has its own "
                            "diffstat)"]
    return "\n".join(lines)


def _replace(new: Path, out: Path) -> None:
    """Move the finished directory new to out, replacing what was there.
    SIGINT and SIGTERM wait until both renames are done: an interrupt
    leaves the old series or the new one, never none."""
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    signals = {signal.SIGINT, signal.SIGTERM}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        if out.exists():
            out.rename(old)
        new.rename(out)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    if old.exists():
        shutil.rmtree(old)
