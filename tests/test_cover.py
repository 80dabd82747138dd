"""The cover letter's structure (generate.cover_text) and the results it
may quote (nsgen/results.py: only those of the same patches)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import generate
from nsgen import results, steps
from nsgen.tree import Repo

SECTIONS = ("Base: ", "Why: ", "What: ", "The rule: ", "ABI:",
            "Tests of this very series", "Who to ask: ")


def letter(found: dict[str, dict[str, object]]) -> str:
    ksrc = SimpleNamespace(version="6.12.118", git=None)
    base = SimpleNamespace(tree="2e339aba1eae6fa625232088fed10c113ca56dba")
    decisions = [steps.Decision(f"000{i}-module-step-{i}.patch",
                                steps.Kind.APPLIES, "the code is there")
                 for i in range(1, 7)]
    checks = generate.CoverChecks(
        "  - equivalence (make verify): 839 files, 834 identical",
        "  - module ABI: kept", "    treewide: 2015 hunks, 3 to read",
        "Who to ask: see who-to-ask.txt beside this series.",
        "ACPI:\n  Someone <someone@example.org> (maintainer)\n" * 500,
        found)
    return generate.cover_text(ksrc, "linux-source-6.12 6.12.118-1", base,
                               decisions, "1.1.1", checks)[1]


def test_structure_and_size() -> None:
    text = letter({})
    at = [text.index(s) for s in SECTIONS]
    assert at == sorted(at), "sections out of order"
    assert len(text.encode()) < 15000
    assert "(maintainer)" not in text       # the table is in who-to-ask.txt
    assert "base-commit" not in text
    assert "Uwe Kleine-König" in text and "Peter Zijlstra" in text
    assert text.count("not run on this series; make release runs it") == 2


def test_results_quoted_when_given() -> None:
    boot = {"passed": 122, "failed": 0, "kernel": "6.12.118",
            "date": "2026-12-07 16:00 UTC", "elapsed": 300,
            "config": "x86_64 defconfig"}
    text = letter({"boot-test": boot})
    assert "boot test (make boot-test): 122 passed, 0 failed on 6.12.118" \
        in " ".join(text.split())
    assert text.count("make release runs it") == 1


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def test_results_belong_to_the_same_patches(tmp_path: Path) -> None:
    """The key of the commits is the key of their mails, whoever sent them
    and whatever the subject prefix; other patches get another key, and
    a result recorded under one key is not found under another."""
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q")
    env = ["-c", "user.name=A", "-c", "user.email=a@example.org"]
    (src / "f").write_text("one\n")
    git(src, "add", "f")
    git(src, *env, "commit", "-q", "-m", "base")
    base = git(src, "rev-parse", "HEAD").strip()
    for n in (2, 3):
        (src / "f").write_text(f"{n}\n")
        git(src, *env, "commit", "-q", "-am", f"change {n}")
    repo = Repo(src / ".git", src)
    key = results.key_of_commits(repo, base, "HEAD")
    out = tmp_path / "mails"
    git(src, "format-patch", "-q", "--cover-letter", "--subject-prefix",
        "PATCH v2", "-o", str(out), f"{base}..HEAD")
    assert results.key_of_mails(out) == key
    git(src, *env, "commit", "-q", "--amend", "-m", "other words")
    assert results.key_of_commits(repo, base, "HEAD") == key
    (src / "f").write_text("4\n")
    git(src, *env, "commit", "-q", "-am", "change 4")
    other = results.key_of_commits(repo, base, "HEAD")
    assert other != key
    work = tmp_path / "work"
    results.record(work, "boot-test", key, {"passed": 1, "failed": 0})
    assert results.recorded(work, "boot-test", key)["passed"] == 1
    assert results.recorded(work, "boot-test", other) is None
