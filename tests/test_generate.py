"""generate.py on a small kernel-shaped tree: the whole pipeline, its
guarantees (input untouched, reproducible, idempotent) and its errors."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import generate
from nsgen.run import run
from tests import minitree

PROJECT = Path(__file__).resolve().parent.parent


def listing(series: Path) -> list[Path]:
    """The series' files (its marker, .ns-series-owned, left out)."""
    return sorted(p for p in series.iterdir() if not p.name.startswith("."))


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    ksrc = minitree.make(tmp_path / "linux")
    order = tmp_path / "patches" / "series"
    order.parent.mkdir()
    order.write_text("generate: ns-string\ngenerate: export-for\n")
    return {"ksrc": ksrc, "order": order, "work": tmp_path / "wd",
            "out": tmp_path / "out", "tmp": tmp_path}


def gen(env: dict[str, Path], *extra: str, out: Path | None = None) -> int:
    return generate.main(["generate", "--ksrc", str(env["ksrc"]),
                          "--workdir", str(env["work"]),
                          "--out", str(out or env["out"]), "--jobs", "2",
                          "--series-file", str(env["order"]),
                          "--author", "Test Sender <sender@example.org>",
                          "--date", "2026-12-01T12:00:00+00:00", *extra])


def test_series_converts_and_leaves_input_alone(env: dict[str, Path]) -> None:
    before = digest(env["ksrc"])
    assert gen(env) == 0
    assert digest(env["ksrc"]) == before
    names = [p.name for p in listing(env["out"] / "series")]
    assert names == [
        "0000-cover-letter.patch",
        "0001-treewide-write-symbol-namespaces-as-string-literals.patch",
        "0002-x86-fpu-export-fpu_swap_kvm_fpstate-only-to-kvm.patch",
        "who-to-ask.txt"]
    work = env["work"] / "work"
    foo = (work / "drivers/foo/foo.c").read_text()
    assert 'EXPORT_SYMBOL_NS_GPL(foo, "FOO");' in foo
    assert 'EXPORT_SYMBOL_NS(foo_bar,\n\t\t "FOO");' in foo
    assert 'EXPORT_NS_GPL_DEV_PM_OPS(foo_pm, "FOO") = {' in foo
    assert 'MODULE_IMPORT_NS("BAR");' in foo
    assert 'EXPORT_SYMBOL_NS_GPL(sym, "FOO")' in foo      # the comment
    assert '__EXPORT_SYMBOL(sym, "GPL", ns)' in \
        (work / "include/linux/export.h").read_text()
    assert "MODULE_INFO(import_ns, ns)" in \
        (work / "include/linux/module.h").read_text()
    pm = (work / "include/linux/pm.h").read_text()
    assert '_EXPORT_DEV_PM_OPS(name, "GPL", ns)' in pm
    assert "EXPORT_SYMBOL_NS_GPL(name, ns)" in pm          # pass-through
    assert '"FOO")' in (work / "drivers/foo/foo.h").read_text()
    assert 'ns=\\"$1\\"' in (work / "scripts/nsdeps").read_text()
    assert '"[^"]+"' in (work / "scripts/kernel-doc").read_text()
    assert "-DDEFAULT_SYMBOL_NAMESPACE='\"BAR\"'\n" in \
        (work / "drivers/bar/Makefile").read_text()
    assert '#define DEFAULT_SYMBOL_NAMESPACE "BAZ"\n' in \
        (work / "drivers/bar/baz.c").read_text()
    doc = (work / "Documentation/core-api/symbol-namespaces.rst").read_text()
    assert '(usb_stor_suspend, "USB_STORAGE")' in doc
    assert doc.startswith("It is a string literal: the namespace's name in "
                          "double\nquotes. E.g.::\n")
    patch = (env["out"] / "series" / names[1]).read_text()
    assert ("Documentation/core-api/symbol-namespaces.rst: the namespace "
            "argument is now a string literal") in patch
    assert 'EXPORT_SYMBOL_GPL_FOR(fpu_swap_kvm_fpstate, "kvm");' in \
        (work / "arch/x86/kernel/fpu/core.c").read_text()
    cover = (env["out"] / "series" / "0000-cover-letter.patch").read_text()
    assert "6.12.99" in cover and "*** " not in cover
    words = " ".join(cover.split())
    assert ("whose signature was made by a key that is itself in "
            ".builtin_trusted_keys") in words
    assert 'Without CONFIG_MODULE_SIG the "intree" tag' in words
    assert "livepatch relocations" in words and "kprobes, kallsyms" in words


def test_reproducible(env: dict[str, Path]) -> None:
    assert gen(env) == 0
    other = env["tmp"] / "out2"
    assert gen(env, out=other) == 0
    for p in (env["out"] / "series").iterdir():
        assert p.read_bytes() == (other / "series" / p.name).read_bytes(), p


def test_series_applies_and_is_idempotent(env: dict[str, Path],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert gen(env) == 0
    dest = env["tmp"] / "applied"
    monkeypatch.chdir(env["out"])      # a relative --series, as make passes
    assert generate.main(["apply", "--ksrc", str(env["ksrc"]), "--workdir",
                          str(env["work"]), "--series", "series", "--dest",
                          str(dest)]) == 0
    assert 'EXPORT_SYMBOL_NS_GPL(foo, "FOO");' in \
        (dest / "drivers/foo/foo.c").read_text()
    assert generate.main(["check", "--ksrc", str(env["ksrc"]), "--workdir",
                          str(env["work"]), "--tree", str(dest)]) == 0


def test_applying_again_leaves_the_files_alone(env: dict[str, Path]) -> None:
    """A second apply of the same series rewrites nothing in DEST, so that
    a kernel built from it stays up to date."""
    assert gen(env) == 0
    dest = env["tmp"] / "applied"
    args = ["apply", "--ksrc", str(env["ksrc"]), "--workdir",
            str(env["work"]), "--series", str(env["out"] / "series"),
            "--dest", str(dest)]
    assert generate.main(args) == 0
    changed, unchanged = dest / "drivers/foo/foo.c", dest / "Makefile"
    old = (changed.stat().st_mtime_ns, unchanged.stat().st_mtime_ns)
    assert generate.main(args) == 0
    assert (changed.stat().st_mtime_ns, unchanged.stat().st_mtime_ns) == old
    assert 'EXPORT_SYMBOL_NS_GPL(foo, "FOO");' in changed.read_text()


def test_converted_tree_has_nothing_to_do(env: dict[str, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert gen(env) == 0
    env["ksrc"] = env["work"] / "work"     # the converted tree as input
    env["work"] = env["tmp"] / "wd2"
    assert gen(env) == 0
    assert "nothing to convert" in capsys.readouterr().err
    assert listing(env["out"] / "series") == []


def test_check_finds_a_bare_namespace(env: dict[str, Path],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert gen(env) == 0
    dest = env["tmp"] / "applied"
    assert generate.main(["apply", "--ksrc", str(env["ksrc"]), "--workdir",
                          str(env["work"]), "--series",
                          str(env["out"] / "series"), "--dest",
                          str(dest)]) == 0
    foo = dest / "drivers/foo/foo.c"
    foo.write_text(foo.read_text() + "MODULE_IMPORT_NS(LEFT);\n")
    assert generate.main(["check", "--ksrc", str(env["ksrc"]), "--workdir",
                          str(env["work"]), "--tree", str(dest)]) == 1
    out = capsys.readouterr().out
    assert "drivers/foo/foo.c:14: MODULE_IMPORT_NS(..., LEFT): bare" in out
    # a bare DEFAULT_SYMBOL_NAMESPACE flag in a Makefile is found too
    foo.write_text(foo.read_text().replace("MODULE_IMPORT_NS(LEFT);\n", ""))
    bar = dest / "drivers/bar/Makefile"
    bar.write_text(bar.read_text() + "ccflags-y += -DDEFAULT_SYMBOL_NAMESPACE=X\n")
    assert generate.main(["check", "--ksrc", str(env["ksrc"]), "--workdir",
                          str(env["work"]), "--tree", str(dest)]) == 1
    out = capsys.readouterr().out
    assert "drivers/bar/Makefile:3: DEFAULT_SYMBOL_NAMESPACE flag is bare" in out


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err, "no error printed"
    assert err[-1].startswith("generate.py: error: ")
    return err[-1]


def test_not_a_kernel_tree(env: dict[str, Path],
                           capsys: pytest.CaptureFixture[str]) -> None:
    (env["ksrc"] / "include/linux/export.h").unlink()
    assert gen(env) == 1
    assert "is not a kernel source tree" in one_error(capsys)
    assert not (env["out"] / "series").exists()


def test_spatch_missing(env: dict[str, Path],
                        capsys: pytest.CaptureFixture[str]) -> None:
    assert gen(env, "--spatch", str(env["tmp"] / "no-spatch")) == 1
    assert "not found" in one_error(capsys)


def test_spatch_too_old(env: dict[str, Path],
                        capsys: pytest.CaptureFixture[str]) -> None:
    fake = env["tmp"] / "old-spatch"
    fake.write_text("#!/bin/sh\necho 'spatch version 1.0.8 compiled with OCaml'\n")
    fake.chmod(0o755)
    assert gen(env, "--spatch", str(fake)) == 1
    assert "too old" in one_error(capsys)


def test_patch_that_does_not_apply(env: dict[str, Path],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert gen(env) == 0
    good = listing(env["out"] / "series")
    before = [p.read_bytes() for p in good]
    bad = env["order"].parent / "0001-bad.patch"
    bad.write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@example.invalid>\nDate: Sat, 1 Jan 2000 00:00:00 +0000\n"
        "Subject: [PATCH] module: change a line that is not there\n\n"
        "Signed-off-by: A <a@example.invalid>\n---\n"
        "diff --git a/kernel/module/main.c b/kernel/module/main.c\n"
        "--- a/kernel/module/main.c\n+++ b/kernel/module/main.c\n"
        "@@ -1 +1 @@\n-/* not the loader */\n+/* the new loader */\n")
    env["order"].write_text("0001-bad.patch\ngenerate: ns-string\n")
    assert gen(env) == 1
    msg = one_error(capsys)
    assert "0001-bad.patch refused: 0001-bad.patch fits this tree but does " \
        "not apply: kernel/module/main.c hunk 1 (near line 1)" in msg
    assert "make refresh STEP=0001-bad.patch" in msg
    assert [p.read_bytes() for p in good] == before      # old series kept
    left = env["work"] / "refresh" / "0001-bad"
    assert (left / "kernel/module/main.c.rej").is_file()
    # a second run refuses again and leaves the maintainer's tree alone
    (left / "kernel/module/main.c").write_text("/* fixed by hand */\n")
    assert gen(env) == 1
    assert (left / "kernel/module/main.c").read_text() == \
        "/* fixed by hand */\n"


def fake_make(env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """make and scripts/config that only record what they were asked (the
    mini tree is no kernel to build); make defconfig writes a .config."""
    bin_dir = env["tmp"] / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = env["tmp"] / "make.log"
    make = bin_dir / "make"
    make.write_text("#!/bin/sh\necho \"$*\" >> " + str(log) + "\n"
                    "for a; do case $a in O=*) o=${a#O=};; esac; done\n"
                    "case \" $* \" in *\" defconfig \"*) : > \"$o/.config\";; esac\n")
    make.chmod(0o755)
    config = env["ksrc"] / "scripts/config"
    config.write_text("#!/bin/sh\nexit 0\n")
    config.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


def refresh(env: dict[str, Path], step: str) -> int:
    return generate.main(["refresh", "--ksrc", str(env["ksrc"]), "--workdir",
                          str(env["work"]), "--out", str(env["out"]),
                          "--series-file", str(env["order"]),
                          "--author", "Test Sender <sender@example.org>",
                          "--date", "2026-12-01T12:00:00+00:00", step])


def test_refresh_turns_the_fixed_tree_into_a_variant(
        env: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A step that does not apply is refused with its hunk named; the
    maintainer fixes the refresh tree by hand; refresh writes the step's
    variant for this tree's line (its probe from what the tree shows),
    which then applies exactly, and regenerates."""
    log = fake_make(env, monkeypatch)
    patches = env["order"].parent
    stored = (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@example.invalid>\nDate: Sat, 1 Jan 2000 00:00:00 +0000\n"
        "Subject: [PATCH] module: say what the loader is\n\n"
        "The loader says what it is.\n\n"
        "Signed-off-by: A <a@example.invalid>\n---\nA note for reviewers.\n\n"
        " kernel/module/main.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
        "diff --git a/kernel/module/main.c b/kernel/module/main.c\n"
        "--- a/kernel/module/main.c\n+++ b/kernel/module/main.c\n"
        "@@ -1 +1 @@\n-/* the module loader */\n+/* the module loader: it loads */\n")
    (patches / "0001-say.patch").write_text(stored)
    (patches / "steps.conf").write_text(
        "[0001-say.patch]\nneeds: kernel/module/main.c loader -- the loader "
        "is there\n")
    env["order"].write_text("0001-say.patch\ngenerate: ns-string\n")
    assert gen(env) == 1
    msg = one_error(capsys)
    assert "kernel/module/main.c hunk 1 (near line 1)" in msg
    left = env["work"] / "refresh" / "0001-say"
    assert (left / "kernel/module/main.c.rej").is_file()
    # refused while a .rej is there
    assert refresh(env, "0001") == 1
    assert "still to fix: kernel/module/main.c.rej" in one_error(capsys)
    (left / "kernel/module/main.c").write_text("/* the loader: it loads */\n")
    (left / "kernel/module/main.c.rej").unlink()
    assert refresh(env, "0001") == 0
    variant = patches / "6.12" / "0001-say.patch"
    text = variant.read_text()
    # the message and the note kept, the diff this tree's
    assert text.startswith(stored.split(" kernel/module/main.c |")[0])
    assert "-/* the loader */\n+/* the loader: it loads */\n" in text
    conf = (patches / "steps.conf").read_text()
    assert "variant: 6.12 kernel/module/main.c ^\\s*/\\* the loader \\*/" \
        "\\s*$ -- " in conf
    assert "variant: 6.12 kernel/module/main.c loader -- the loader is " \
        "there" in conf
    assert "kernel/module/main.o" in log.read_text()    # compiled
    assert not left.exists()
    series = listing(env["out"] / "series")
    assert "+/* the loader: it loads */" in series[1].read_text()
    # the variant applies exactly: the next run takes it as it is
    assert gen(env) == 0
    assert "applies in the variant 6.12" in \
        (env["out"] / "series" / "0000-cover-letter.patch").read_text()


def test_dry_run_runs_nothing(env: dict[str, Path],
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert gen(env, "--dry-run") == 0
    out = capsys.readouterr().out
    # the commands as run: git with the project's fixed settings
    assert " format-patch -q --zero-commit --no-signature" in out
    assert "git -c core.autocrlf=false" in out and " add -f -A -- ." in out
    assert not env["work"].exists() and not env["out"].exists()


def test_warm_run_uses_the_cache(env: dict[str, Path],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert gen(env) == 0
    first = sorted(p.read_bytes() for p in (env["out"] / "series").iterdir())
    capsys.readouterr()
    assert gen(env) == 0        # the step's recorded result, replayed
    assert "; replayed: an earlier run's result" in capsys.readouterr().err
    assert sorted(p.read_bytes() for p in
                  (env["out"] / "series").iterdir()) == first
    assert gen(env, "--recompute") == 0     # computed: spatch's own cache
    err = capsys.readouterr().err
    assert "5 spatch results from cache" in err and "replayed" not in err
    assert sorted(p.read_bytes() for p in
                  (env["out"] / "series").iterdir()) == first


def test_kernel_doc_rule_matches_converted_exports(env: dict[str, Path]) -> None:
    assert gen(env) == 0
    line = (env["work"] / "work/scripts/kernel-doc").read_text().split("'")[1]
    script = (f"print((q{{EXPORT_SYMBOL_NS_GPL(foo, \"FOO\");}} =~ /{line}/) "
              "? \"$2\\n\" : \"no\\n\")")
    out = run(["perl", "-e", script]).stdout
    assert out.strip() == "foo"


def test_cover_letter_says_what_external_modules_get() -> None:
    """The paragraph follows the decision on the external-modules step."""
    from nsgen.steps import Decision, Kind
    step = "0003" + generate.EXTMOD_STEP
    applied = generate.external_modules_text(
        [Decision(step, Kind.VARIANT, "", "6.1")])
    assert "keep\nbuilding unchanged" in applied
    assert "__namespace_must_be_a_string_literal" in applied
    upstream = generate.external_modules_text(
        [Decision(step, Kind.ALREADY, "strings only")])
    assert "string literals only" in upstream
    assert "changes nothing" in upstream
    assert generate.external_modules_text([]) == upstream


def test_external_modules_step_is_in_the_series() -> None:
    series = (generate.PROJECT / "patches/series").read_text().splitlines()
    assert sum(line.endswith(generate.EXTMOD_STEP) for line in series) == 1


def stored_patch(subject: str, old: str, new: str, author: str = "") -> str:
    """A hand-written patch on kernel/module/main.c, as patches/ keeps it:
    without an author unless it has a real one (then with its sign-off)."""
    head = "From 0000000000000000000000000000000000000000 Mon Sep 17 " \
        "00:00:00 2001\n"
    body = "Why.\n"
    if author:
        head += f"From: {author}\nDate: Mon, 2 Nov 2026 10:00:00 +0000\n"
        body += f"\nSigned-off-by: {author}\n"
    return (head + f"Subject: [PATCH] {subject}\n\n{body}---\n"
            "diff --git a/kernel/module/main.c b/kernel/module/main.c\n"
            "--- a/kernel/module/main.c\n+++ b/kernel/module/main.c\n"
            f"@@ -1 +1 @@\n-{old}\n+{new}\n")


def test_every_patch_is_the_senders_and_signed_off(
        env: dict[str, Path]) -> None:
    """Stored patches get the sender as author and the input's date (or keep
    a real author and date, then the sender's sign-off follows the
    author's), generated ones too."""
    d = env["order"].parent
    (d / "0001-mine.patch").write_text(stored_patch(
        "module: mine", "/* the loader */", "/* loader 2 */"))
    (d / "0002-theirs.patch").write_text(stored_patch(
        "module: theirs", "/* loader 2 */", "/* loader 3 */",
        "Real Author <real@example.org>"))
    env["order"].write_text("0001-mine.patch\n0002-theirs.patch\n"
                            "generate: ns-string\n")
    assert gen(env) == 0
    files = [f for f in listing(env["out"] / "series") if f.suffix == ".patch"]
    me = "Test Sender <sender@example.org>"
    for f in files:
        text = f.read_text()
        date = ("Mon, 2 Nov 2026 10:00:00 +0000" if "theirs" in f.name
                else "Tue, 1 Dec 2026 12:00:00 +0000")
        assert f"Date: {date}" in text, f.name
        if f.name.startswith("0000"):
            continue
        trailers = [line for line in text.splitlines()
                    if line.startswith("Signed-off-by: ")]
        if "theirs" in f.name:
            assert "From: Real Author <real@example.org>" in text
            assert trailers == ["Signed-off-by: Real Author "
                                "<real@example.org>", f"Signed-off-by: {me}"]
        else:
            assert f"From: {me}" in text, f.name
            assert trailers == [f"Signed-off-by: {me}"], f.name
    assert "NOT SENDABLE" not in files[0].read_text()


def test_unsigned_placeholder_is_marked(env: dict[str, Path],
                                        monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.chdir(tmp_path)
    assert generate.main([
        "generate", "--ksrc", str(env["ksrc"]), "--workdir", str(env["work"]),
        "--out", str(env["out"]), "--jobs", "2", "--series-file",
        str(env["order"]), "--date", "2026-12-01T12:00:00+00:00"]) == 0
    assert "unsigned and not sendable" in capsys.readouterr().err
    files = listing(env["out"] / "series")
    assert "NOT SENDABLE: this series is unsigned" in files[0].read_text()
    for f in [f for f in files[1:] if f.suffix == ".patch"]:
        text = f.read_text()
        assert "UNSIGNED - set git config user.name" in next(
            line for line in text.splitlines() if line.startswith("From: "))
        assert "Signed-off-by:" not in text
