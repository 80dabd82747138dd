"""nsgen/identity.py and the authorship of stored patches."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nsgen import identity, series
from nsgen.run import ToolError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME without git configuration, and a directory outside any repo."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "cwd").mkdir()
    return tmp_path


def test_flag_wins(home: Path) -> None:
    s = identity.resolve("Jane Doe <jane@example.org>", home / "cwd")
    assert (s.name, s.email, s.signed) == ("Jane Doe", "jane@example.org",
                                           True)
    assert s.sign_off() == "Signed-off-by: Jane Doe <jane@example.org>"


def test_flag_must_be_name_and_email(home: Path) -> None:
    for bad in ("jane@example.org", "<jane@example.org>", "Jane <jane>"):
        with pytest.raises(ToolError, match="Name <email>"):
            identity.resolve(bad, home / "cwd")


def test_git_config(home: Path) -> None:
    subprocess.run(["git", "config", "--global", "user.name", "Git User"],
                   check=True)
    subprocess.run(["git", "config", "--global", "user.email",
                    "git@example.org"], check=True)
    assert identity.resolve(None, home / "cwd").ident() == \
        "Git User <git@example.org>"


def test_nothing_set_gives_the_marked_placeholder(home: Path) -> None:
    s = identity.resolve(None, home / "cwd")
    assert s is identity.PLACEHOLDER and not s.signed
    assert s.sign_off() == ""
    assert "user.name" in s.name and "AUTHOR=" in s.name
    assert "unsigned and not sendable" in identity.UNSIGNED_NOTE


def test_date_given(tmp_path: Path) -> None:
    assert identity.input_date(tmp_path, "Sat, 28 Nov 2026 10:54:11 +0100") \
        == ("2026-11-28T10:54:11+01:00", "--date")
    # without a time zone: UTC, as the help says
    assert identity.input_date(tmp_path, "2026-11-28") == \
        ("2026-11-28T00:00:00+00:00", "--date")
    for bad in ("yesterday", "2026-13-01", "28/11/2026"):
        with pytest.raises(ToolError, match="expected RFC 2822 or ISO 8601"):
            identity.input_date(tmp_path, bad)


def test_date_from_the_debian_package(tmp_path: Path) -> None:
    tree = tmp_path / "linux-source-6.12"
    tree.mkdir()
    (tmp_path / "linux-source-6.12.package").write_text(
        "linux-source-6.12 6.12.118-1~deb12u1\n"
        "date Sat, 28 Nov 2026 10:54:11 +0100\n")
    date, where = identity.input_date(tree, None)
    assert date == "2026-11-28T10:54:11+01:00"
    assert "linux-source-6.12" in where


def test_date_from_a_git_tree(tmp_path: Path) -> None:
    env = {**os.environ, "GIT_COMMITTER_DATE": "2026-10-01T08:00:00+02:00",
           "GIT_AUTHOR_DATE": "2026-10-01T08:00:00+02:00",
           "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org",
           "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.org"}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True, env=env)
    assert identity.input_date(tmp_path, None) == \
        ("2026-10-01T08:00:00+02:00", "the newest commit")


def test_no_date_is_an_error_never_an_mtime(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="DATE= or --date"):
        identity.input_date(tmp_path, None)


STORED = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
Subject: [PATCH] module: something

Body.
---
 a | 1 +
"""


def test_stored_patch_gets_the_sender_as_author() -> None:
    out = series.with_author(STORED, "Jane Doe <jane@example.org>",
                             "2026-11-28T10:54:11+01:00")
    assert out.splitlines()[1:4] == [
        "From: Jane Doe <jane@example.org>",
        "Date: Sat, 28 Nov 2026 10:54:11 +0100",
        "Subject: [PATCH] module: something"]


def test_patch_with_an_author_keeps_it() -> None:
    authored = STORED.replace("Subject:", "From: Real Author <r@example.org>"
                              "\nSubject:")
    assert series.with_author(authored, "Jane <j@example.org>",
                              "2026-11-28T10:54:11+01:00") == authored
