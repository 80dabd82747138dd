"""Who writes the series, and the date its patches carry.

The sender is whoever runs the generator: --author "Name <email>", else
git's user.name and user.email.  With neither, the series is still written,
under a placeholder that names the settings to change, and unsigned.

Dates come from the input, never from a file's mtime (which a checkout does
not keep): --date, else the Debian source package's changelog date (setup.sh
records it next to the tree), else the newest commit of a git tree.  The
same input gives the same bytes.
"""

from __future__ import annotations

import email.utils
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .run import ToolError

IDENT_RE = re.compile(r"\s*([^<>]*?)\s*<([^<>\s]+@[^<>\s]+)>\s*")


@dataclass(frozen=True)
class Sender:
    name: str
    email: str
    signed: bool = True

    def ident(self) -> str:
        return f"{self.name} <{self.email}>"

    def sign_off(self) -> str:
        return f"Signed-off-by: {self.ident()}" if self.signed else ""


PLACEHOLDER = Sender("UNSIGNED - set git config user.name and user.email, "
                     "or AUTHOR=", "unsigned@example.invalid", False)
UNSIGNED_NOTE = ("this series is unsigned and not sendable: no author was "
                 "given (AUTHOR=\"Name <email>\" or --author) and git has no "
                 "user.name and user.email")


def parse(text: str) -> Sender:
    """'Name <email>' as given to --author."""
    m = IDENT_RE.fullmatch(text)
    if m is None or not m.group(1):
        raise ToolError(f"--author {text!r}: expected \"Name <email>\"")
    return Sender(m.group(1), m.group(2))


def _git_config(key: str, cwd: Path) -> str:
    try:
        proc = subprocess.run(["git", "config", "--get", key], cwd=cwd,
                              capture_output=True, text=True, timeout=60,
                              check=False)
    except OSError:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def resolve(author: str | None, cwd: Path) -> Sender:
    """The sender: --author, else git's user.name/user.email (as git sees
    them in cwd), else the placeholder."""
    if author:
        return parse(author)
    name, mail = _git_config("user.name", cwd), _git_config("user.email", cwd)
    if name and mail:
        return parse(f"{name} <{mail}>")
    return PLACEHOLDER


def parse_date(text: str) -> str:
    """An RFC 2822 or ISO 8601 date, as git takes it (ISO 8601, with the
    zone; a date without one is UTC); a one-line error otherwise."""
    when: datetime | None = None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        try:
            when = datetime.fromisoformat(text.strip())
        except ValueError:
            when = None
    if when is None:
        raise ToolError(f"date {text!r}: expected RFC 2822 or ISO 8601, "
                        "e.g. 2026-12-01T12:00:00+01:00 or 2026-12-01 "
                        "(without a time zone: UTC)")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.isoformat()


def input_date(ksrc: Path, given: str | None) -> tuple[str, str]:
    """(date, where it came from) for the patches of ksrc."""
    if given:
        return parse_date(given), "--date"
    side = ksrc.parent / f"{ksrc.name}.package"
    if side.is_file():
        for line in side.read_text().splitlines()[1:]:
            key, _, value = line.partition(" ")
            if key == "date" and value.strip():
                return (parse_date(value),
                        f"the changelog of {side.read_text().split()[0]}")
    if (ksrc / ".git").exists():
        proc = subprocess.run(["git", "-C", str(ksrc), "log", "-1",
                               "--format=%cI"], capture_output=True,
                              text=True, timeout=120, check=False)
        if proc.returncode == 0 and proc.stdout.strip():
            return parse_date(proc.stdout.strip()), "the newest commit"
    raise ToolError(f"KSRC={ksrc}: no date to give the patches (no Debian "
                    "package changelog recorded by setup.sh, not a git "
                    "tree); give one with DATE= or --date")
