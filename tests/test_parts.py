"""The treewide conversion in parts (nsgen/convert.py): the end of patch
0003's transition, and parts under the mail limit with the explanation and
the definitions last."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nsgen import convert
from nsgen.tree import Repo

LIB = """\
# External modules may write a symbol namespace as an identifier or as a
# string literal (include/linux/export.h); the kernel's own code must write
# a string literal.  Until every namespace of the tree is one, its code may
# write either too: the conversion's last patch takes this out.
KBUILD_NS_AS_WRITTEN ?= y
ifneq ($(KBUILD_EXTMOD)$(KBUILD_NS_AS_WRITTEN),)
_c_flags += -D__KBUILD_EXTMOD_NS
endif
"""


def test_end_transition(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    lib = tmp_path / "scripts" / "Makefile.lib"
    lib.write_text(LIB)
    assert convert.end_transition(tmp_path)
    text = lib.read_text()
    assert "KBUILD_NS_AS_WRITTEN" not in text
    assert "# a string literal.\nifneq ($(KBUILD_EXTMOD),)\n" in text
    assert not convert.end_transition(tmp_path)      # nothing left to end


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=a", "-c",
                    "user.email=a@example.org", *args], check=True,
                   capture_output=True)


def test_parts_stay_under_the_limit(tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "MAIL_LIMIT", 6000)
    monkeypatch.setattr(convert, "PART_BUDGET", 2500)
    files = [f"drivers/d{i}/x.c" for i in range(12)] + ["include/linux/e.h"]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("".join(f"EXPORT_SYMBOL_NS(s{n}, FOO);\n"
                                          for n in range(10)))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    for f in files:
        (tmp_path / f).write_text((tmp_path / f).read_text().replace(
            "FOO", '"FOO"'))
    git(tmp_path, "add", ".")
    repo = Repo(tmp_path / ".git", tmp_path)
    message = f"{convert.NS_STRING_SUBJECT}\n\nWhy and how.\n"
    parts = convert.split_parts(repo, files, {"include/linux/e.h"}, message)
    assert len(parts) >= 3
    assert [p.files for p in parts[:-1]] and parts[-1].files == \
        ["include/linux/e.h"]
    assert sorted(f for p in parts for f in p.files) == sorted(files)
    n = len(parts)
    assert parts[-1].subject == f"{convert.NS_STRING_SUBJECT} ({n}/{n})"
    assert "Why and how." in parts[-1].message
    sizes = convert.diff_sizes(repo, files)
    for p in parts:
        assert convert.is_ns_string(p.subject)
        assert sum(sizes[f] for f in p.files) <= 2500 or len(p.files) == 1
    # small enough for one mail: no parts
    monkeypatch.setattr(convert, "MAIL_LIMIT", 10**6)
    assert convert.split_parts(repo, files, set(), message) == []


def test_subjects_of_the_conversion() -> None:
    assert convert.is_ns_string(convert.NS_STRING_SUBJECT)
    assert convert.is_ns_string(convert.NS_STRING_SUBJECT + " (3/12)")
    assert not convert.is_ns_string(convert.NS_STRING_SUBJECT + " again")
