"""nsgen/review.py: the hunk classifier on small diffs, get_maintainer.pl's
answers summarised, and the verify helpers that need no kernel build."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nsgen import review, tree, verify
from nsgen.run import run
from nsgen.review import Kind

DIFF = """\
diff --git a/drivers/foo/foo.c b/drivers/foo/foo.c
index 1111111..2222222 100644
--- a/drivers/foo/foo.c
+++ b/drivers/foo/foo.c
@@ -7 +7 @@ int foo(void)
-EXPORT_SYMBOL_NS_GPL(foo, FOO);
+EXPORT_SYMBOL_NS_GPL(foo, "FOO");
@@ -9,2 +9,2 @@ EXPORT_SYMBOL_NS_GPL(foo, FOO);
-EXPORT_SYMBOL_NS(foo_bar,
-\t\t FOO);
+EXPORT_SYMBOL_NS(foo_bar,
+\t\t "FOO");
@@ -14 +14,2 @@
-MODULE_IMPORT_NS(BAR);
+MODULE_IMPORT_NS("BAR");
+MODULE_IMPORT_NS("BAZ");
diff --git a/include/linux/module.h b/include/linux/module.h
--- a/include/linux/module.h
+++ b/include/linux/module.h
@@ -301 +301 @@
-#define MODULE_IMPORT_NS(ns)\tMODULE_INFO(import_ns, __stringify(ns))
+#define MODULE_IMPORT_NS(ns)\tMODULE_INFO(import_ns, ns)
diff --git a/scripts/nsdeps b/scripts/nsdeps
--- a/scripts/nsdeps
+++ b/scripts/nsdeps
@@ -30 +30 @@ generate_deps() {
-\t$SPATCH -D ns=$1 $2
+\t$SPATCH -D ns=\\"$1\\" $2
"""


def test_parse_hunks() -> None:
    hunks = review.parse_hunks(DIFF)
    assert [(h.path, h.line, len(h.removed), len(h.added)) for h in hunks] == [
        ("drivers/foo/foo.c", 7, 1, 1), ("drivers/foo/foo.c", 9, 2, 2),
        ("drivers/foo/foo.c", 14, 1, 2), ("include/linux/module.h", 301, 1, 1),
        ("scripts/nsdeps", 30, 1, 1)]


def test_review_counts_and_lists_the_others() -> None:
    r = review.review_diff("treewide: quote", DIFF)
    assert (len(r.hunks), r.mechanical) == (5, 3)
    assert [(h.path, h.line) for h in r.others] == [
        ("drivers/foo/foo.c", 14), ("scripts/nsdeps", 30)]
    assert review.review_text([r]) == (
        "    treewide: quote: 5 hunks, 3 mechanical, 2 to read:\n"
        "      drivers/foo/foo.c:14\n      scripts/nsdeps:30")


@pytest.mark.parametrize("old,new", [
    ("EXPORT_SYMBOL_NS_GPL(foo, FOO);", 'EXPORT_SYMBOL_NS_GPL(foo, "FOO");'),
    ("EXPORT_SYMBOL_NS_GPL(peci_xfer_##x, PECI)",
     'EXPORT_SYMBOL_NS_GPL(peci_xfer_##x, "PECI")'),
    ("#define X(n, ns) _EXPORT(n, \"GPL\", #ns)",
     "#define X(n, ns) _EXPORT(n, \"GPL\", ns)"),
    ("#define X(n, ns) _EXPORT(n, \"\", __stringify( ns ))",
     "#define X(n, ns) _EXPORT(n, \"\", ns)"),
    ("\tEXPORT_SYMBOL_NS(usb_stor_suspend, USB_STORAGE);",
     '\tEXPORT_SYMBOL_NS(usb_stor_suspend, "USB_STORAGE");'),
])
def test_mechanical(old: str, new: str) -> None:
    assert review.line_is_mechanical(old, new)


@pytest.mark.parametrize("old,new", [
    ("a(FOO);", "a(FOO);"),                       # no edit at all
    ("a(FOO);", 'a("BAR");'),                     # another name
    ("a(FOO);", 'a("FOO" );'),                    # whitespace changed too
    ("a(FOO);", "a(\"FOO\", \"kvm\");"),          # something added
    ("a(ns);", "a(#ns);"),                        # the wrong way round
    ("a(x##ns);", "a(xns);"),                     # token pasting is not #
    ("a(__stringify(x, y));", "a(x);"),
    ("EXPORT_SYMBOL_GPL(f);", 'EXPORT_SYMBOL_GPL_FOR(f, "kvm");'),
])
def test_not_mechanical(old: str, new: str) -> None:
    assert not review.line_is_mechanical(old, new)


def test_uneven_hunk_is_other() -> None:
    h = review.Hunk("a.c", 1, 1, ("a(FOO);",), ('a("FOO");', "b();"))
    assert review.classify(h) is Kind.OTHER
    h = review.Hunk("a.c", 1, 1, (), ("b();",))
    assert review.classify(h) is Kind.OTHER


GM = {
    "sound/x.c": [
        "Jane Doe <jane@example.org> (maintainer:SOUND)",
        "Ann Roe <ann@example.org> (reviewer:SOUND - SOC LAYER / DYNAMIC...)",
        "linux-sound@vger.kernel.org (open list:SOUND)",
        "linux-kernel@vger.kernel.org (open list)"],
    "drivers/y.c": [
        "Bob Poe <bob@example.org> (maintainer:Y DRIVER (YDRV))",
        "Jane Doe <jane@example.org> (maintainer:SOUND)",
        "linux-kernel@vger.kernel.org (open list)"],
}


def test_maintainers_summary() -> None:
    m = review.Maintainers.of(GM)
    assert m.lists == {"linux-kernel@vger.kernel.org": 2,
                       "linux-sound@vger.kernel.org": 1}
    assert m.people == {"Jane Doe <jane@example.org>": 2,
                        "Ann Roe <ann@example.org>": 1,
                        "Bob Poe <bob@example.org>": 1}


def fake_gm_tree(tmp_path: Path, logged: str, answer: str
                 ) -> tuple[Path, Path]:
    """(tree, log): a tree with a.c, b.c, c.c and a get_maintainer.pl that
    appends its perl expression 'logged' to log, then prints 'answer'."""
    root = tmp_path / "linux"
    (root / "scripts").mkdir(parents=True)
    (root / "MAINTAINERS").write_text("X\n")
    for f in ("a.c", "b.c", "c.c"):
        (root / f).write_text("")
    calls = tmp_path / "calls"
    (root / "scripts/get_maintainer.pl").write_text(
        f'open(my $c, ">>", "{calls}"); print $c "{logged}\\n";\n' + answer)
    return root, calls


def test_get_maintainers_runs_once_per_file(tmp_path: Path) -> None:
    root, calls = fake_gm_tree(
        tmp_path, "$ARGV[-1]",
        'print "Jane Doe <jane\\@example.org> (maintainer:ALL)\\n";\n')
    cache = tmp_path / "cache"
    m = review.get_maintainers(root, ["a.c", "b.c"], cache, 2)
    assert m is not None and m.people == {"Jane Doe <jane@example.org>": 2}
    m = review.get_maintainers(root, ["a.c", "c.c"], cache, 2)
    assert m is not None and m.people == {"Jane Doe <jane@example.org>": 2}
    assert sorted(calls.read_text().split()) == ["a.c", "b.c", "c.c"]
    m = review.get_maintainers(root, ["a.c", "gone.c"], cache, 1)
    assert m is not None and list(m.per_file) == ["a.c"]
    assert review.get_maintainers(tmp_path, ["a.c"], cache, 1) is None


def test_get_maintainers_asks_again_only_where_sections_changed(
        tmp_path: Path) -> None:
    """The next point release's MAINTAINERS: a file is asked about again
    only when a section that can concern it changed (or the .mailmap)."""
    root, calls = fake_gm_tree(
        tmp_path, "@ARGV",
        'print "Jane Doe <jane\\@example.org> (maintainer:ALL)\\n";\n')
    sections = {"A": "A DRIVER\nM:\tAnn <a@example.org>\nF:\ta.c\n",
                "B": "B DRIVER\nM:\tBob <b@example.org>\nF:\tb.c\n"}

    def write(*extra: str) -> None:
        (root / "MAINTAINERS").write_text(
            "\n".join([*sections.values(), *extra]))

    def asked() -> list[str]:
        lines = calls.read_text().splitlines() if calls.exists() else []
        calls.unlink(missing_ok=True)
        return sorted(a for r in lines for a in r.split() if a.endswith(".c"))

    cache = tmp_path / "cache"
    write()
    review.get_maintainers(root, ["a.c", "b.c"], cache, 1)
    review.get_maintainers_union(root, ["a.c", "b.c"], cache, 1)
    assert asked() == ["a.c", "a.c", "b.c", "b.c"]
    # a section for another file: nothing is asked again
    write("C DRIVER\nM:\tCy <c@example.org>\nF:\tc.c\n")
    review.get_maintainers(root, ["a.c", "b.c"], cache, 1)
    review.get_maintainers_union(root, ["a.c", "b.c"], cache, 1)
    assert asked() == []
    # b.c's section changed: b.c alone, and the union that has it
    sections["B"] += "R:\tRay <r@example.org>\n"
    write()
    review.get_maintainers(root, ["a.c", "b.c"], cache, 1)
    review.get_maintainers_union(root, ["a.c", "b.c"], cache, 1)
    assert asked() == ["a.c", "b.c", "b.c"]
    # .mailmap renames people: everything is asked again
    (root / ".mailmap").write_text("Jane Roe <jane@example.org>\n")
    review.get_maintainers(root, ["a.c"], cache, 1)
    assert asked() == ["a.c"]


def test_normalized_ignores_markers_and_whitespace() -> None:
    a = b'# 1 "a.c"\n# 1 "<built-in>" 1\nint  x;\n\n# 12 "a.h" 2\nstatic const char s[] = "FOO";\n'
    b = b'# 1 "a.c"\nint x;\n# 40 "b.h"\nstatic const char s[]\n = "FOO";\n'
    assert verify.normalized(a) == verify.normalized(b)
    assert verify.normalized(a) != verify.normalized(a.replace(b'FOO', b'BAR'))


def test_outcome_round_trip_and_cover_lines(tmp_path: Path) -> None:
    o = verify.Outcome("c" * 40, "p" * 40, "t" * 40, "gcc 12", total=3,
                       files=[verify.FileResult("a.c", verify.Verdict.IDENTICAL),
                              verify.FileResult("b.c", verify.Verdict.FAILED,
                                                "asm/neon.h: No such file"),
                              verify.FileResult("c.c", verify.Verdict.ALLOWED,
                                                "FOO is a macro there")])
    again = verify.Outcome.from_json(o.to_json())
    assert again == o and again.complete and again.passed
    assert o.counts() == ("1 identical, 0 different, 1 different but "
                          "allowed, 1 could not be preprocessed")
    assert json.loads(o.to_json())["files"][1] == [
        "b.c", "could not be preprocessed", "asm/neon.h: No such file"]


def test_pick_spreads_a_subset() -> None:
    files = [f"f{i:03}.c" for i in range(100)]
    assert verify.pick(files, None) == files
    assert verify.pick(files, 4) == ["f000.c", "f025.c", "f050.c", "f075.c"]


def test_patch_subject(tmp_path: Path) -> None:
    p = tmp_path / "0003.patch"
    p.write_text("From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\n"
                 "Subject: [PATCH 3/5] treewide: write symbol namespaces as\n"
                 " string literals\n\nbody\n")
    assert verify.patch_subject(p) == \
        "treewide: write symbol namespaces as string literals"


def test_compare_verdicts(tmp_path: Path) -> None:
    dirs = {s: (tmp_path / s, tmp_path / f"build-{s}")
            for s in ("before", "after")}
    text = {"same.c": (b'# 1 "same.c"\nint x;\n', b"int  x;\n"),
            "diff.c": (b'const char *n = "FOO";\n', b'const char *n = "BAR";\n'),
            "ok.c": (b"int a;\n", b"int b;\n"),
            "idle.c": (b"int a;\n", b"int a;\n")}
    for f, pair in text.items():
        for (_, build), data in zip(dirs.values(), pair):
            build.mkdir(exist_ok=True)
            (build / (f[:-2] + ".i")).write_bytes(data)
    logs = {"before": f"{dirs['before'][0]}/arm.c:8:10: fatal error: "
            "asm/neon.h: No such file or directory\n"}
    o = verify.Outcome("c", "p", "t", "gcc", total=5)
    allow = {"ok.c": "FOO is a macro here", "idle.c": "stale entry"}
    diffs = verify.compare(o, ["arm.c", "diff.c", "idle.c", "ok.c", "same.c"],
                           dirs, logs, allow, "message naming ok.c",
                           verify.Digests(tmp_path / "d.json"))
    assert [(f.path, f.verdict) for f in o.files] == [
        ("arm.c", verify.Verdict.FAILED), ("diff.c", verify.Verdict.DIFFERENT),
        ("idle.c", verify.Verdict.IDENTICAL), ("ok.c", verify.Verdict.ALLOWED),
        ("same.c", verify.Verdict.IDENTICAL)]
    assert o.files[0].detail == ("before: asm/neon.h: No such file or "
                                 "directory; after: no output from the "
                                 "preprocessor (see the make log)")
    assert '-const char *n = "FOO";' in diffs["diff.c"]
    assert o.problems == ["idle.c: in cocci/equivalence.allow but its "
                          "output does not change; drop it"]
    assert not o.passed


def test_allow_list_reaches_the_commit_message(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from nsgen import convert
    allow = tmp_path / "equivalence.allow"
    allow.write_text("# comment\n\ndrivers/x.c  X is a macro in this file\n")
    monkeypatch.setattr(convert, "EQUIVALENCE_ALLOW", allow)
    assert convert.read_allow(allow) == {"drivers/x.c": "X is a macro in this file"}
    assert convert.allow_paragraph(["drivers/y.c"]) == ""
    text = convert.allow_paragraph(["drivers/x.c"])
    assert "    drivers/x.c: X is a macro in this file\n" in text
    allow.write_text("drivers/x.h\n")
    with pytest.raises(convert.ToolError, match="equivalence.allow:1:"):
        convert.read_allow(allow)


def test_first_error_in_an_included_header() -> None:
    log = ("In file included from /s/include/a.h:3,\n"
           "                 from /s/drivers/x.c:5:\n"
           "/s/include/b.h:9:10: fatal error: asm/y.h: No such file\n"
           "/s/arch/z.c:1:10: fatal error: asm/neon.h: No such file\n")
    assert verify.first_error(log, Path("/s"), "drivers/x.c") == \
        "include/b.h: asm/y.h: No such file"
    assert verify.first_error(log, Path("/s"), "arch/z.c") == \
        "asm/neon.h: No such file"


def test_cover_lines_quote_only_this_series(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    tree = "t" * 40
    monkeypatch.setattr(verify, "find_conversion",
                        lambda repo: ("c" * 40, "p" * 40, tree))
    assert "not run for this series; make verify" in \
        verify.cover_lines(tmp_path, None)  # type: ignore[arg-type]
    o = verify.Outcome("c" * 40, "p" * 40, tree, "gcc 12", total=2, files=[
        verify.FileResult("a.c", verify.Verdict.IDENTICAL),
        verify.FileResult("arch/loongarch/x.c", verify.Verdict.FAILED,
                          "Debian 12 has no cross compiler for loongarch")],
        cross={"arm64 defconfig": "aarch64-linux-gnu-gcc 12"})
    (tmp_path / "verify" / "results").mkdir(parents=True)
    (tmp_path / "verify" / "results" / f"{tree}.json").write_text(o.to_json())
    text = verify.cover_lines(tmp_path, None)  # type: ignore[arg-type]
    assert " ".join(text.split()).startswith(
        "- equivalence (make verify): the 2 C files the ns-string commit "
        "touches, preprocessed before and after it with x86_64 allmodconfig "
        "(gcc 12), arm64 defconfig for the files of its arch/ "
        "(aarch64-linux-gnu-gcc 12), compared without line markers and "
        "whitespace: 1 identical,")
    assert max(len(line) for line in text.splitlines()) <= 72
    assert "    1 identical, 0 different, 0 different but allowed,\n" \
        "    1 could not be preprocessed:\n" \
        "      arch/loongarch/x.c (Debian 12 has no cross compiler for " \
        "loongarch)" in text


def test_external_module_dir(tmp_path: Path) -> None:
    (tmp_path / "tools/testing/cxl/test").mkdir(parents=True)
    (tmp_path / "tools/testing/cxl/Kbuild").write_text("obj-m += x.o\n")
    assert verify.external_dir(tmp_path, "tools/testing/cxl/test/mem.c") == \
        "tools/testing/cxl"
    assert verify.external_dir(tmp_path, "tools/other/a.c") is None
    assert verify.external_dir(tmp_path, "drivers/a.c") is None
    assert verify.output(tmp_path, tmp_path / "b", "tools/testing/cxl/a.c") \
        == tmp_path / "tools/testing/cxl/a.i"
    assert verify.output(tmp_path, tmp_path / "b", "drivers/a.c") \
        == tmp_path / "b/drivers/a.i"


def test_verify_inputs_key_covers_trees_message_compiler_allow(
        tmp_path: Path) -> None:
    from nsgen.run import run
    from nsgen.tree import GIT_ENV, Repo
    run(["git", "init", "-q", str(tmp_path)], env=GIT_ENV)
    repo = Repo(tmp_path / ".git", tmp_path)
    (tmp_path / "a.c").write_text("int a;\n")
    repo.git("add", "a.c")
    repo.git("commit", "-q", "-m", "base")
    (tmp_path / "a.c").write_text("int b;\n")
    repo.git("commit", "-q", "-a", "-m", "change")
    head, parent = repo.git("rev-parse", "HEAD", "HEAD^").split()
    key = verify.inputs_key(repo, head, parent, "change", "gcc 12", {})
    assert key == verify.inputs_key(repo, head, parent, "change", "gcc 12",
                                    {})
    assert key != verify.inputs_key(repo, head, parent, "change", "gcc 13",
                                    {})
    assert key != verify.inputs_key(repo, head, parent, "change", "gcc 12",
                                    {"a.c": "why"})
    assert key != verify.inputs_key(repo, head, parent, "said otherwise",
                                    "gcc 12", {})
    (tmp_path / "a.c").write_text("int c;\n")
    repo.git("commit", "-q", "-a", "--amend", "-m", "change")
    other = repo.git("rev-parse", "HEAD").strip()
    assert key != verify.inputs_key(repo, other, parent, "change", "gcc 12",
                                    {})


def test_set_aside_moves_outputs_where_compare_finds_them(
        tmp_path: Path) -> None:
    src, build, dest = tmp_path / "src", tmp_path / "build", tmp_path / "kept"
    (src / "tools/testing/cxl").mkdir(parents=True)
    (src / "tools/testing/cxl/Kbuild").write_text("obj-m += a.o\n")
    (src / "tools/testing/cxl/a.i").write_text("int a;\n")
    (build / "drivers").mkdir(parents=True)
    (build / "drivers/b.i").write_text("int b;\n")
    files = ["tools/testing/cxl/a.c", "drivers/b.c", "drivers/failed.c"]
    verify.set_aside(src, build, files, dest)
    assert not (build / "drivers/b.i").exists()
    assert verify.output(dest, dest, "drivers/b.c").read_text() == "int b;\n"
    assert verify.output(dest, dest, "tools/testing/cxl/a.c").read_text() \
        == "int a;\n"
    assert not verify.output(dest, dest, "drivers/failed.c").exists()


def test_verify_drops_the_old_layout(tmp_path: Path) -> None:
    for name in ("before", "build-after", "src", "results"):
        (tmp_path / name).mkdir()
    said: list[str] = []
    verify.drop_old_layout(tmp_path, said.append)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "src"]
    assert len(said) == 2


def test_files_of_a_changed_makefile_are_verified(tmp_path: Path) -> None:
    from nsgen.tree import Repo
    for f, text in {"drivers/usb/storage/Makefile": "ccflags-y += -DX=Y\n",
                    "drivers/usb/storage/usb.c": "int a;\n",
                    "drivers/usb/storage/sub/deeper.c": "int b;\n",
                    "drivers/usb/storage/usb.h": "int c;\n",
                    "drivers/other/o.c": "int d;\n"}.items():
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text(text)
    repo = Repo(tmp_path / ".git", tmp_path)
    repo.git("init", "-q")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "x")
    changed = ["drivers/usb/storage/Makefile", "drivers/other/o.c"]
    assert verify.built_by_makefiles(repo, "HEAD", changed) == \
        ["drivers/usb/storage/usb.c"]
    assert verify.built_by_makefiles(repo, "HEAD", ["drivers/other/o.c"]) \
        == []
    o = verify.Outcome("c", "p", "t", "gcc", total=9, by_makefile=2)
    assert o.what() == ("the 9 C files: 7 the ns-string commit touches, 2 in "
                        "directories whose Makefile it changes")


def test_get_maintainers_union_asks_for_many_files_at_once(
        tmp_path: Path) -> None:
    root, calls = fake_gm_tree(
        tmp_path, "@ARGV",
        'print "Jane Doe <jane\\@example.org> (maintainer:ALL)\\n";\n'
        'print "list\\@example.org (open list:ALL)\\n";\n')
    cache = tmp_path / "cache"
    lines = review.get_maintainers_union(root, ["a.c", "b.c", "c.c", "x.c"],
                                         cache, 2)
    assert lines == ["Jane Doe <jane@example.org> (maintainer:ALL)",
                     "list@example.org (open list:ALL)"]
    runs = calls.read_text().splitlines()
    assert len(runs) == 2 and sorted(
        a for r in runs for a in r.split() if a.endswith(".c")) == \
        ["a.c", "b.c", "c.c"]
    assert review.get_maintainers_union(root, ["c.c", "b.c", "a.c"], cache,
                                        2) == lines
    assert len(calls.read_text().splitlines()) == 2      # from the cache
    assert review.by_section(lines) == {"ALL": [
        "Jane Doe <jane@example.org> (maintainer)",
        "list@example.org (open list)"]}


FIXTURE_MAINTAINERS = """\
List of maintainers
-------------------

Descriptive text, which get_maintainer.pl skips.
\tM: Mail patches to (a legend line, indented)

THE REST
M:\tLinus <torvalds@example.org>
S:\tMaintained
L:\tlinux-kernel@example.org
F:\t*
F:\t*/

ALPHA DRIVER
M:\tAnn Roe <ann@example.org>
S:\tMaintained
F:\tdrivers/alpha/

# a comment inside the file
BETA DRIVER
M:\tBob Poe <bob@example.org>
S:\tMaintained
F:\tdrivers/beta/beta_*.c
X:\tdrivers/beta/beta_x.c

GAMMA BY NAME
M:\tGus <gus@example.org>
S:\tMaintained
N:\tgamma

DELTA (NO FILES)
M:\tDan <dan@example.org>
S:\tMaintained
K:\tdelta

EPSILON [REGEX]
M:\tEve <eve@example.org>
S:\tMaintained
F:\tdrivers/eps[ab]/
"""


def test_trim_maintainers_keeps_what_can_match() -> None:
    trimmed = review.trim_maintainers(FIXTURE_MAINTAINERS,
                                      ["drivers/alpha/a.c", "kernel/k.c"])
    titles = [b[0] for b in review.maintainers_sections(trimmed)]
    # the text before the first section with THE REST (F: * reaches every
    # file), ALPHA (its directory), GAMMA (an N: regex is always kept)
    assert titles == ["List of maintainers", "ALPHA DRIVER", "GAMMA BY NAME"]
    assert "THE REST\nM:\tLinus" in trimmed
    # a pattern is literal only up to its first wildcard or bracket
    assert "EPSILON" in review.trim_maintainers(FIXTURE_MAINTAINERS,
                                                ["drivers/epsb/e.c"])
    assert "F:\tdrivers/alpha/" in trimmed
    trimmed = review.trim_maintainers(FIXTURE_MAINTAINERS,
                                      ["drivers/beta/beta_x.c"])
    assert "BETA DRIVER\nM:\tBob Poe <bob@example.org>\nS:\tMaintained\n" \
        "F:\tdrivers/beta/beta_*.c\nX:\tdrivers/beta/beta_x.c" in trimmed
    assert "ALPHA DRIVER" not in trimmed and "DELTA" not in trimmed


def test_trimmed_maintainers_give_get_maintainer_the_same_answer(
        tmp_path: Path) -> None:
    """The real scripts/get_maintainer.pl, where a kernel tree is at hand,
    answers the same with the trimmed file as with the whole one."""
    src = Path(os.environ.get("KSRC", "")) if os.environ.get("KSRC") else \
        tree.default_workdir() / "src" / "linux-source-6.12"
    script = src / review.GET_MAINTAINER
    if not script.is_file() or "mpath" not in script.read_text(
            errors="replace"):
        pytest.skip(f"no get_maintainer.pl with --mpath in {src}")
    root = tmp_path / "linux"
    for d in ("Documentation", "arch", "include", "fs", "init", "ipc",
              "kernel", "lib", "drivers/alpha", "drivers/beta",
              "drivers/gamma_dev", "scripts"):
        (root / d).mkdir(parents=True)
    for f in ("COPYING", "CREDITS", "Kbuild", "Makefile", "README",
              "drivers/alpha/a.c", "drivers/beta/beta_1.c",
              "drivers/beta/beta_x.c", "drivers/gamma_dev/g.c",
              "kernel/k.c"):
        (root / f).write_text("")
    (root / "MAINTAINERS").write_text(FIXTURE_MAINTAINERS)
    (root / review.GET_MAINTAINER).write_bytes(script.read_bytes())
    files = ["drivers/beta/beta_1.c", "drivers/beta/beta_x.c",
             "drivers/gamma_dev/g.c"]
    whole = run(["perl", review.GET_MAINTAINER, *review.GM_OPTIONS,
                 *[a for f in files for a in ("-f", f)]], cwd=root,
                env={"PERL_HASH_SEED": "0"}).stdout.splitlines()
    trimmed = review.ask_get_maintainer(root, files, tmp_path / "cache")
    assert trimmed == whole
    assert "Bob Poe <bob@example.org> (maintainer:BETA DRIVER)" in trimmed
    assert any(line.startswith("Gus <gus@example.org>") for line in trimmed)
    assert not any("Ann Roe" in line for line in trimmed)
