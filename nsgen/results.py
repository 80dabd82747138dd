"""Test results recorded for a series, found again by its patches.

A result belongs to a series when it was made on the same patches: the
key is the list of the patches' 'git patch-id --stable' (the diff only, so
that the author, the dates and a version prefix in the subject do not
matter), in order.  The same key comes from the commits of a work tree
and from the mails of the series.  Results live in WORKDIR/results/KIND/
under that key; the cover letter quotes those of its own key only.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from .run import ToolError
from .series import patch_files
from .tree import Repo


def _ids(diff_text: str) -> list[str]:
    proc = subprocess.run(["git", "patch-id", "--stable"], input=diff_text,
                          capture_output=True, text=True,
                          errors="surrogateescape")
    if proc.returncode != 0:
        raise ToolError(f"git patch-id failed: {proc.stderr.strip()}")
    return [line.split()[0] for line in proc.stdout.splitlines() if line]


def patch_id(diff_text: str) -> str:
    """The 'git patch-id --stable' of one diff ('' for none)."""
    ids = _ids(diff_text)
    return ids[0] if ids else ""


def key_of(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:24]


def key_of_commits(repo: Repo, base: str, head: str) -> str:
    """The key of the commits base..head of repo."""
    revs = repo.git("rev-list", "--reverse", f"{base}..{head}").split()
    return key_of([i for rev in revs for i in _ids(
        repo.git("show", "--format=", "--no-renames", rev))])


def key_of_mails(series_dir: Path) -> str:
    """The key of a series written by format-patch (the cover letter, which
    has no diff, left out)."""
    return key_of([i for mail in patch_files(series_dir)
                   for i in _ids(mail.read_text(encoding="utf-8",
                                                errors="surrogateescape"))])


def record(workdir: Path, kind: str, key: str, data: dict[str, Any]) -> Path:
    """Keep data (with the time) as the KIND result of the series key."""
    path = workdir / "results" / kind / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({**data, "key": key,
                               "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                     time.gmtime())},
                              indent=1, sort_keys=True))
    tmp.replace(path)
    return path


def recorded(workdir: Path, kind: str, key: str) -> dict[str, Any] | None:
    path = workdir / "results" / kind / f"{key}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return data if data.get("key") == key else None
