"""Versions of the series (nsgen/history.py): v1 on one tree, v2 on the
next point release, and what the cover letter says changed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import shutil
from pathlib import Path

import pytest

import generate
from nsgen import history
from tests import minitree


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    order = tmp_path / "patches" / "series"
    order.parent.mkdir()
    order.write_text("generate: ns-string\n")
    return {"order": order, "tmp": tmp_path, "work": tmp_path / "wd"}


def tree(env: dict[str, Path], name: str, sublevel: int,
         extra: dict[str, str] | None = None,
         drop: tuple[str, ...] = ()) -> Path:
    root = minitree.make(env["tmp"] / name)
    mk = root / "Makefile"
    mk.write_text(mk.read_text().replace("SUBLEVEL = 99",
                                         f"SUBLEVEL = {sublevel}"))
    for f, text in (extra or {}).items():
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text(text)
    for f in drop:
        (root / f).unlink()
    return root


def gen(env: dict[str, Path], ksrc: Path, out: Path, *extra: str) -> int:
    return generate.main([
        "generate", "--ksrc", str(ksrc),
        "--workdir", str(env["work"] / ksrc.name), "--out", str(out),
        "--jobs", "2", "--series-file", str(env["order"]),
        "--author", "Test Sender <sender@example.org>",
        "--date", "2026-12-01T12:00:00+00:00", *extra])


def cover(out: Path) -> str:
    return (out / "series" / "0000-cover-letter.patch").read_text()


NEW_DRIVER = {"drivers/new/new.c": (
    "#include <linux/module.h>\nint n(void)\n{\n\treturn 0;\n}\n"
    "EXPORT_SYMBOL_NS_GPL(n, NEWNS);\n")}


MOVING = "int a;\nint b;\nint c;\nint m;\nEXPORT_SYMBOL_NS_GPL(m, MNS);\n"


def test_v2_on_the_next_point_release(env: dict[str, Path]) -> None:
    one = tree(env, "linux-6.12.1", 1, {"drivers/m/m.c": MOVING})
    assert gen(env, one, env["tmp"] / "o1") == 0
    text = cover(env["tmp"] / "o1")
    assert "[PATCH 0/" in text and "Changes since" not in text
    assert "\nchange-id: 2026" in text
    # (lines added at the top of m.c: its hunk, context and all, moves)
    two = tree(env, "linux-6.12.2", 2, {
        **NEW_DRIVER, "drivers/m/m.c": "int n;\n" * 4 + MOVING},
        drop=("drivers/bar/baz.c",))
    assert gen(env, two, env["tmp"] / "o2") == 0
    # v2's new work directory took v1's work tree (only the files that
    # differ written), noted for the next point release
    assert not (env["work"] / one.name / "work").exists()
    assert (env["work"] / two.name / "work" / "drivers/new/new.c").is_file()
    assert history.last_workdir(env["work"] / "history", "6.12") == \
        (env["work"] / two.name).resolve()
    series = env["tmp"] / "o2" / "series"
    text = cover(env["tmp"] / "o2")
    assert "[PATCH v2 0/" in text
    assert "Changes since v1" in text
    assert "Base: 6.12.1 -> 6.12.2" in text
    # the file with a new export is newly converted, the removed one no
    # longer touched
    block = text.split("The conversion, by file:")[1]
    assert "newly converted (1):\n      drivers/new/new.c" in block
    assert "no longer touched (1):\n      drivers/bar/baz.c" in block
    assert "    the same hunks at other lines: 1 file, not listed" in block
    assert "drivers/m/m.c" not in block.split("git range-diff")[0]
    # the same change-id as v1, for b4
    ids = {line for t in (cover(env["tmp"] / "o1"), text)
           for line in t.splitlines() if line.startswith("change-id: ")}
    assert len(ids) == 1
    # the range-diff beside the series, not a *.patch
    assert (series / "range-diff-v1-v2.txt").is_file()
    assert not list(series.glob("range-diff*.patch"))
    assert "[PATCH v2 1/1]" in (series / "0001-treewide-write-symbol-"
                                "namespaces-as-string-literals.patch"
                                ).read_text()[:2000]
    info = json.loads((series / history.INFO).read_text())
    assert info["number"] == 2 and info["line"] == "6.12"
    # recorded, with a tag b4 --compare-to reads
    store = env["work"] / "history" / history.STORE
    tags = history.git(store, "tag", "-l").split()
    assert tags == ["sent/ns-series-6.12-v1", "sent/ns-series-6.12-v2"]
    tag = history.git(store, "cat-file", "-p", tags[1])
    assert "Subject: [PATCH v2 0/1]" in tag and "\nchange-id: " in tag
    # the branch b4 prep keeps: the cover commit with its tracking data,
    # then the series, its tree the same as v2's
    assert history.git(store, "symbolic-ref", "HEAD").strip() == \
        "refs/heads/b4/ns-series-6.12"
    cover_msg = history.git(store, "log", "-1", "--format=%B", "HEAD~1")
    assert cover_msg.startswith("module: string symbol namespaces")
    assert history.B4_MARKER in cover_msg and '"revision": 2' in cover_msg
    assert history.git(store, "rev-parse", "HEAD^{tree}") == \
        history.git(store, "rev-parse", f"{info['head']}^{{tree}}")
    # b4 itself (a dependency setup.sh installs) compares v1 with it
    b4 = subprocess.run(["b4", "prep", "--compare-to", "v1"], cwd=store,
                        capture_output=True, text=True,
                        env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    assert b4.returncode == 0, b4.stderr
    assert re.search(r"^1: +\w+ ! 1: +\w+ treewide: write symbol", b4.stdout,
                     re.M), b4.stdout[:500]


def test_identical_regeneration_keeps_the_version(
        env: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    one = tree(env, "linux-6.12.1", 1)
    assert gen(env, one, env["tmp"] / "o1") == 0
    again = tree(env, "linux-6.12.2", 2)     # same code, next release
    assert gen(env, again, env["tmp"] / "o2") == 0
    assert "[PATCH 0/" in cover(env["tmp"] / "o2")
    assert "the same patches as v1" in capsys.readouterr().err
    assert [v.number for v in history.versions(env["work"] / "history",
                                               "6.12")] == [1]


def test_since_from_another_line_is_refused(
        env: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    one = tree(env, "linux-6.12.1", 1)
    assert gen(env, one, env["tmp"] / "o1") == 0
    other = tree(env, "linux-7.3.1", 1)
    mk = other / "Makefile"
    mk.write_text("VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 1\n"
                  "EXTRAVERSION =\n")
    assert gen(env, other, env["tmp"] / "o2", "--since",
               str(env["tmp"] / "o1" / "series")) == 1
    err = [x for x in capsys.readouterr().err.splitlines()
           if x.startswith("generate.py: error")]
    assert len(err) == 1
    assert "a series for Linux 6.12" in err[0] and "compare within a line" \
        in err[0]
    assert not (env["tmp"] / "o2").exists()


def test_reroll_count_and_in_reply_to(env: dict[str, Path]) -> None:
    one = tree(env, "linux-6.12.1", 1)
    assert gen(env, one, env["tmp"] / "o1") == 0
    mbox = env["tmp"] / "sent.mbox"
    shutil.copy(env["tmp"] / "o1" / "series" / "0000-cover-letter.patch",
                mbox)
    # as sent: the Message-ID it went out with
    text = re.sub(r"(?m)^Message-ID: .*$",
                  "Message-ID: <v1-cover@example.org>", mbox.read_text(),
                  count=1)
    mbox.write_text(text)
    two = tree(env, "linux-6.12.2", 2, NEW_DRIVER)
    assert gen(env, two, env["tmp"] / "o2", "--reroll-count", "5",
               "--in-reply-to", str(mbox)) == 0
    text = cover(env["tmp"] / "o2")
    assert "[PATCH v5 0/" in text
    assert "In-Reply-To: <v1-cover@example.org>" in text
    assert "<v1-cover@example.org>" in text.split("Changes since v1")[1]


MAIN_C = "".join(f"static int f{i}(void)\n{{\n\treturn {i};\n}}\n\n"
                 for i in range(8))


def test_a_hunk_moved_by_drift_shows_in_the_range_diff(
        env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A hand-written patch whose context drifted on the next release
    (taken with fuzz) is 'changed' in the letter, after its '---', and in
    the range-diff."""
    from tests.test_generate import fake_make
    patches = env["order"].parent
    (patches / "0001-say.patch").write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 "
        "00:00:00 2001\n"
        "From: A <a@example.invalid>\nDate: Sat, 1 Jan 2000 00:00:00 +0000\n"
        "Subject: [PATCH] module: f3 returns 33\n\nIt does.\n\n"
        "Signed-off-by: A <a@example.invalid>\n---\n"
        "diff --git a/kernel/module/main.c b/kernel/module/main.c\n"
        "--- a/kernel/module/main.c\n+++ b/kernel/module/main.c\n"
        "@@ -15,7 +15,7 @@ static int f2(void)\n \n static int f3(void)\n {\n"
        "-\treturn 3;\n+\treturn 33;\n }\n \n static int f4(void)\n")
    env["order"].write_text("0001-say.patch\ngenerate: ns-string\n")
    one = tree(env, "linux-6.12.1", 1,
               {"kernel/module/main.c": MAIN_C})
    assert gen(env, one, env["tmp"] / "o1") == 0
    # the next release adds a line right above f3: the hunk's first
    # context line is gone, fuzz 1 takes it
    drifted = MAIN_C.replace("}\n\nstatic int f3",
                             "}\n/* f3 follows */\nstatic int f3")
    two = tree(env, "linux-6.12.2", 2, {"kernel/module/main.c": drifted})
    env["ksrc"] = two
    fake_make(env, monkeypatch)
    assert gen(env, two, env["tmp"] / "o2") == 0
    series = env["tmp"] / "o2" / "series"
    text = cover(env["tmp"] / "o2")
    assert "changed in kernel/module/main.c: module: f3 returns 33" in text
    assert "Decisions that changed:\n    0001-say.patch: applies -> " \
        "applies with drift (kernel/module/main.c: hunk 1 fuzz 1; " \
        "compiled: kernel/module/main.o)" in text
    patch = next(series.glob("0001-*.patch")).read_text()
    assert "---\nChanges in v2: hunks changed in kernel/module/main.c" in patch
    rdiff = (series / "range-diff-v1-v2.txt").read_text()
    assert re.search(r"1: +\w+ ! 1: +\w+ module: f3 returns 33", rdiff)


def test_a_hunk_under_another_heading_is_the_same_hunk(tmp_path: Path
                                                       ) -> None:
    """The history's bare repository finds a hunk's function heading
    without the tree's .gitattributes (the nearest label, say): a label
    renamed above a converted line, or the line moved down, is not
    another hunk."""
    store = tmp_path / "store.git"
    history.git(store, "init", "-q", "--bare")

    def commit(before: str, after: str) -> str:
        def blob(text: str) -> str:
            return history.git(store, "hash-object", "-w", "--stdin",
                               stdin=text).strip()

        trees = [history.git(store, "mktree", stdin=f"100644 blob "
                             f"{blob(t)}\tf.c\n").strip()
                 for t in (before, after)]
        base = history.git(store, "commit-tree", "-m", "a",
                           trees[0]).strip()
        return history.git(store, "commit-tree", "-p", base, "-m", "b",
                           trees[1]).strip()

    body = "".join(f"\tx{n};\n" for n in range(8))

    def text(label: str, top: int, ns: str) -> str:
        return ("int f;\n" * top + f"{label}:\n{body}"
                f"EXPORT_SYMBOL_NS(f, {ns});\n{body}")

    one = commit(text("err", 0, "FOO"), text("err", 0, '"FOO"'))
    two = commit(text("err_acpi", 3, "FOO"), text("err_acpi", 3, '"FOO"'))
    (a, at_a), (b, at_b) = (history._file_diffs(store, [c])
                            for c in (one, two))
    assert a == b and at_a != at_b
    three = commit(text("err", 0, "FOO"), text("err", 0, '"BAR"'))
    assert history._file_diffs(store, [three])[0] != a


def test_the_history_diffs_with_the_tree_s_diff_drivers(tmp_path: Path
                                                         ) -> None:
    """The bare history repository takes the tree's diff= attributes (and
    nothing else), so that a hunk's heading is its C function."""
    store = tmp_path / "store.git"
    history.git(store, "init", "-q", "--bare")
    attrs = tmp_path / ".gitattributes"
    attrs.write_text("# SPDX\n*.[ch] diff=cpp\n*.dts diff=dts\n"
                     "*.bin binary\n*.c filter=evil\n")
    history.use_diff_drivers(store, attrs)
    assert (store / "info/attributes").read_text() == \
        "*.[ch] diff=cpp\n*.dts diff=dts\n"
    blobs = [history.git(store, "hash-object", "-w", "--stdin",
                         stdin=t).strip()
             for t in ("int f(void)\n{\nerr:\n\ta;\n\tb;\n\tc;\n\tFOO;\n}\n",
                       "int f(void)\n{\nerr:\n\ta;\n\tb;\n\tc;\n\tBAR;\n}\n")]
    trees = [history.git(store, "mktree", stdin=f"100644 blob {b}\tf.c\n"
                         ).strip() for b in blobs]
    diff = history.git(store, "diff", *trees)
    assert "@@ int f(void)" in diff
