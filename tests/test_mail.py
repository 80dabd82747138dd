"""nsgen/mail.py: addresses from get_maintainer.pl's answers, one thread."""

from __future__ import annotations

from pathlib import Path

from nsgen import mail

PER_FILE = {
    "kernel/module/main.c": [
        "Luis Maint <luis@example.org> (maintainer:MODULE SUPPORT)",
        "Petr Rev <petr@example.org> (reviewer:MODULE SUPPORT)",
        "linux-modules@example.org (open list:MODULE SUPPORT)",
        "linux-kernel@example.org (open list:MODULE SUPPORT)"],
    "scripts/mod/modpost.c": [
        "Masa Build <masa@example.org> (maintainer:KERNEL BUILD)",
        "linux-kbuild@example.org (open list:KERNEL BUILD)",
        "linux-kernel@example.org (open list)"],
    "drivers/foo/foo.c": [
        "Foo Maint <foo@example.org> (maintainer:FOO DRIVER)",
        "foo-list@example.org (open list:FOO DRIVER)",
        "linux-kernel@example.org (open list)"],
}


def test_a_patch_goes_to_its_files_maintainers() -> None:
    a = mail.for_files(["kernel/module/main.c", "scripts/mod/modpost.c"],
                       PER_FILE)
    assert a.to == ["Luis Maint <luis@example.org>",
                    "Masa Build <masa@example.org>"]
    assert a.cc == ["Petr Rev <petr@example.org>",
                    "linux-modules@example.org", "linux-kernel@example.org",
                    "linux-kbuild@example.org"]


def test_treewide_goes_to_the_loader_maintainers_and_three_lists() -> None:
    a = mail.treewide(PER_FILE)
    assert a.to == ["Luis Maint <luis@example.org>"]
    assert a.cc == ["linux-modules@example.org", "linux-kernel@example.org",
                    "linux-kbuild@example.org"]


WIDE = PER_FILE["drivers/foo/foo.c"] + PER_FILE["kernel/module/main.c"][:1]


PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Jane <jane@example.org>
Date: Tue, 1 Dec 2026 12:00:00 +0000
Subject: [PATCH {n}/2] {subject}

Why.

Signed-off-by: Jane <jane@example.org>
---
diff --git a/{file} b/{file}
"""


def write_series(d: Path) -> list[Path]:
    files = [d / "0000-cover-letter.patch", d / "0001-a.patch",
             d / "0002-treewide.patch"]
    files[0].write_text(PATCH.format(n=0, subject="cover", file="x"))
    files[1].write_text(PATCH.format(n=1, subject="module: a",
                                     file="kernel/module/main.c"))
    files[2].write_text(PATCH.format(n=2, subject="treewide: b",
                                     file="drivers/foo/foo.c"))
    return files


def headers(text: str) -> dict[str, str]:
    head = text.partition("\n\n")[0].replace("\n ", " ")
    return dict(line.split(": ", 1) for line in head.splitlines()[1:])


def test_thread_and_addresses(tmp_path: Path) -> None:
    files = write_series(tmp_path)
    mail.address_and_thread(files, {2}, PER_FILE, WIDE, "jane@example.org")
    h = [headers(f.read_text()) for f in files]
    cover_id = h[0]["Message-ID"]
    assert cover_id.startswith("<ns-series-") and \
        cover_id.endswith("@example.org>")
    assert "In-Reply-To" not in h[0]
    for x in h[1:]:
        assert x["In-Reply-To"] == cover_id == x["References"]
    assert len({x["Message-ID"] for x in h}) == 3
    assert h[1]["To"] == "Luis Maint <luis@example.org>"
    assert h[0]["To"] == h[1]["To"] and h[0]["Cc"] == h[1]["Cc"]
    assert h[2]["To"] == "Luis Maint <luis@example.org>"
    assert "foo-list" not in h[2]["Cc"]
    assert "who-to-ask.txt" in files[2].read_text().partition("\n---\n")[2]


def test_from_and_subject_are_unfolded(tmp_path: Path) -> None:
    files = write_series(tmp_path)
    files[1].write_text(files[1].read_text().replace(
        "Subject: [PATCH 1/2] module: a",
        "Subject: [PATCH 1/2] module: a subject long enough\n to be folded"
        ).replace("From: Jane <jane@example.org>",
                  "From: Jane With A Long Name\n <jane@example.org>"))
    mail.address_and_thread(files, {2}, PER_FILE, WIDE, "jane@example.org")
    text = files[1].read_text()
    assert "Subject: [PATCH 1/2] module: a subject long enough to be " \
        "folded\n" in text
    assert "From: Jane With A Long Name <jane@example.org>\n" in text


def test_same_series_same_headers(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    fa, fb = write_series(a), write_series(b)
    mail.address_and_thread(fa, {2}, PER_FILE, WIDE, "jane@example.org")
    mail.address_and_thread(fb, {2}, PER_FILE, WIDE, "jane@example.org")
    assert [f.read_bytes() for f in fa] == [f.read_bytes() for f in fb]
