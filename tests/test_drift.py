"""Hand-written steps on trees that drifted (nsgen/drift.py, steps.decide).

The fixtures are derived at test time from a real tree's files (never
committed): the files the hand-written patches of its line touch, copied
into a git repository, then changed the way upstream moves code between
point releases.  Each step must still be taken as written (no new
variant); a change of design must be refused with the hunk named.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen import convert, drift, series, spatch, steps  # noqa: E402
from nsgen.identity import Sender  # noqa: E402
from nsgen.tree import Repo, sender_env  # noqa: E402

SENDER = Sender("Test Sender", "sender@example.org")
DATE = "2026-12-01T12:00:00+00:00"

PATCHES = PROJECT / "patches"


def real_tree(line: str) -> Path | None:
    """An unpacked linux-source of the line: KSRC_<line> from the
    environment, else the newest one in the default work directory."""
    given = os.environ.get(f"KSRC_{line.replace('.', '_')}")
    if given:
        return Path(given)
    src = Path.home() / ".cache/ns-series/src"
    if (src / f"linux-source-{line}" / "Makefile").is_file():
        return src / f"linux-source-{line}"
    found = sorted(p for p in src.glob(f"linux-source-{line}*")
                   if (p / "Makefile").is_file()
                   and re.fullmatch(rf"linux-source-{re.escape(line)}"
                                    r"([.~-].*)?", p.name))
    return found[-1] if found else None


def no_tree(line: str) -> None:
    """Skip for want of a tree (make test); in make check, which fetches
    every tree first, fail."""
    why = f"no linux-source-{line} unpacked"
    if os.environ.get("NS_REQUIRE_TREES"):
        pytest.fail(why + " (make check fetched none)")
    pytest.skip(why + " (make check fetches it)")


def touched(names: list[str]) -> list[str]:
    files: set[str] = set()
    for n in names:
        for p in [PATCHES / n, *PATCHES.glob(f"*/{n}")]:
            if p.is_file():
                files |= set(re.findall(r"^\+\+\+ b/(\S+)", p.read_text(),
                                        re.M))
                files |= set(re.findall(r"^--- a/(\S+)", p.read_text(),
                                        re.M))
    return sorted(files)


def hand_written() -> list[str]:
    return [x.strip() for x in (PATCHES / "series").read_text().splitlines()
            if x.strip().endswith(".patch") and not x.startswith("#")]


def fixture_repo(root: Path, tree: Path) -> Repo:
    """The files the hand-written patches touch, copied from tree into a
    git repository at root (one commit)."""
    for f in touched(hand_written()):
        src = tree / f
        if src.is_file():
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_bytes(src.read_bytes())
    git(root, "init", "-q")
    git(root, "add", "-A", ".")
    git(root, "commit", "-q", "-m", "base")
    repo = Repo(root / ".git", root)
    repo.env = sender_env(SENDER.name, SENDER.email, DATE)
    return repo


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-C", str(root), *args], env=env,
                          check=True, capture_output=True,
                          text=True).stdout


def run_steps(repo: Repo, cache: Path) -> list[steps.Decision]:
    """Run the series on repo as generate does: the generated steps on its
    files, each hand-written step decided and applied (fuzz included: GNU
    patch, then the result committed)."""
    rules = steps.read_rules(PATCHES / "steps.conf")
    root = repo.work_tree
    assert root is not None
    out = []
    version = spatch.find_spatch("spatch")
    for e in series.read_order(PATCHES / "series", set(convert.STEPS)):
        if e.kind != "patch":
            # the conversion changes export.h and module.h, which the later
            # patches expect converted; the other generated steps change
            # no file a hand-written patch touches
            if e.name != "ns-string":
                continue
            r = convert.run_step(e.name, repo, "spatch", version, 2, cache)
            if r.status is convert.Status.CHANGED:
                git(root, "commit", "-q", "-m", e.name)
            continue
        name = e.name
        d = steps.decide(repo, PATCHES, name, rules.get(name))
        out.append(d)
        if d.kind is steps.Kind.REFUSED:
            break
        if d.patch is None:
            continue
        if d.fit is not None and d.fit.fuzzed:
            rc, report = drift.gnu_patch(root, d.patch, dry_run=False)
            assert rc == 0, report
            git(root, "add", "-f", "-A", ".")
            git(root, "commit", "-q", "-m", name)
        else:
            series.apply_patch(repo, d.patch, SENDER, DATE)
    return out


def hunk_context(line: str, patch: Path) -> list[tuple[str, str]]:
    """(file, first context line) of each hunk of patch."""
    out = []
    path = ""
    lines = patch.read_text().splitlines()
    for i, x in enumerate(lines):
        m = re.match(r"^\+\+\+ b/(\S+)", x)
        if m:
            path = m.group(1)
        if x.startswith("@@ ") and path and i + 1 < len(lines) and \
                lines[i + 1].startswith(" ") and lines[i + 1].strip():
            out.append((path, lines[i + 1][1:]))
    return out


def variant_of(line: str) -> str:
    return {"6.1": "6.1", "7.3": "7.x"}.get(line, "")


def patches_of(line: str) -> list[Path]:
    v = variant_of(line)
    return [PATCHES / v / n if v and (PATCHES / v / n).is_file()
            else PATCHES / n for n in hand_written()]


# --- the drifts -------------------------------------------------------------

def patch_lines(line: str) -> dict[str, int]:
    """How often each line (without its +/-/space) occurs in the line's
    patches: a drift changes only lines one patch expects, once."""
    count: dict[str, int] = {}
    for p in patches_of(line):
        for x in p.read_text().splitlines():
            if x[:1] in " -+" and not x.startswith(("---", "+++")):
                count[x[1:]] = count.get(x[1:], 0) + 1
    return count


def comment_in_context(root: Path, line: str) -> None:
    """A comment line added between the first two context lines of every
    hunk whose first context line is unique in its file and in the
    patches."""
    seen = patch_lines(line)
    for patch in patches_of(line):
        for path, first in hunk_context(line, patch):
            f = root / path
            if not f.is_file() or seen.get(first) != 1:
                continue
            text = f.read_text()
            if text.count(first + "\n") == 1:
                f.write_text(text.replace(first + "\n", first + "\n"
                                          "/* drifted: a new comment */\n"))


def renamed_local(root: Path, line: str) -> None:
    """A local variable renamed in the first context line of the hunks
    whose first context line declares or uses one ('int err' -> 'int
    ret')."""
    seen = patch_lines(line)
    for patch in patches_of(line):
        for path, first in hunk_context(line, patch):
            m = re.search(r"\b(err|ret|i|len|name)\b", first)
            f = root / path
            if not m or not f.is_file() or first.startswith("#") or \
                    seen.get(first) != 1:
                continue
            text = f.read_text()
            if text.count(first + "\n") == 1:
                new = re.sub(rf"\b{m.group(1)}\b", m.group(1) + "_renamed",
                             first)
                f.write_text(text.replace(first + "\n", new + "\n"))


def include_added(root: Path, line: str) -> None:
    """An #include added before the first #include of every C file that
    no patch has in a hunk."""
    seen = patch_lines(line)
    for f in root.rglob("*.[ch]"):
        text = f.read_text()
        for inc in re.findall(r"^#include .*$", text, re.M):
            if inc not in seen:
                f.write_text(text.replace(
                    inc + "\n", "#include <linux/drifted.h>\n" + inc + "\n",
                    1))
                break


def function_moved(root: Path, line: str) -> None:
    """The first function of kernel/module/main.c that no patch touches
    moved to the end of the file (every hunk after it moves up)."""
    f = root / "kernel/module/main.c"
    text = f.read_text()
    patched = "\n".join(p.read_text() for p in patches_of(line))
    for m in re.finditer(r"^(static [^\n;]*\b(\w+)\([^;{]*\)\n\{\n.*?^\}\n)",
                         text, re.M | re.S):
        if m.group(2) not in patched:
            body = m.group(1)
            f.write_text(text.replace(body, "", 1) + "\n" + body)
            return
    raise AssertionError("no untouched function to move in main.c")


DRIFTS: dict[str, Callable[[Path, str], None]] = {
    "comment in a hunk's context": comment_in_context,
    "local variable renamed near a hunk": renamed_local,
    "include added": include_added,
    "function moved": function_moved,
}


@pytest.mark.parametrize("line", ["6.12", "6.1", "7.3"])
@pytest.mark.parametrize("drift_name", list(DRIFTS))
def test_step_survives_drift(tmp_path: Path, line: str,
                             drift_name: str) -> None:
    tree = real_tree(line)
    if tree is None:
        no_tree(line)
    repo = fixture_repo(tmp_path / "t", tree)
    plain = run_steps(fixture_repo(tmp_path / "plain", tree),
                      tmp_path / "cache")
    DRIFTS[drift_name](tmp_path / "t", line)
    git(tmp_path / "t", "commit", "-q", "-a", "-m", "drift")
    decided = run_steps(repo, tmp_path / "cache")
    assert len(decided) == len(plain), decided[-1].line()
    for before, after in zip(plain, decided):
        assert after.kind is not steps.Kind.REFUSED, after.line()
        # the same patch as on the undrifted tree: no new variant
        assert (before.kind is steps.Kind.ALREADY) == \
            (after.kind is steps.Kind.ALREADY), after.line()
        assert before.patch == after.patch, after.line()
    assert any(d.drift for d in decided), "the drift moved no hunk"


def test_change_of_design_is_refused_with_the_hunk(tmp_path: Path) -> None:
    """7.2's read_symbols() reports a reserved import with error(), where
    the 7.x variant's hunk removes mod_error(): a semantic difference a
    fuzz must not paper over."""
    tree = real_tree("7.3")
    if tree is None:
        no_tree("7.3")
    repo = fixture_repo(tmp_path / "t", tree)
    f = tmp_path / "t/scripts/mod/modpost.c"
    text = f.read_text()
    new = re.sub(r"mod_error\(mod, \"explicitly importing namespace '%s' "
                 r"is not allowed\.\\n\",\n(\s*)namespace\);",
                 "error(\"%s: explicitly importing namespace \\\\\"%s\\\\\" "
                 "is not allowed.\\\\n\",\n\\1mod->name, namespace);", text)
    assert new != text
    f.write_text(new)
    git(tmp_path / "t", "commit", "-q", "-a", "-m", "7.2's reporting")
    decided = run_steps(repo, tmp_path / "cache")
    refused = [d for d in decided if d.kind is steps.Kind.REFUSED]
    assert refused, [d.line() for d in decided]
    assert refused[0].step.startswith("0004-")
    assert "scripts/mod/modpost.c hunk 2 in static void read_symbols(" \
        in refused[0].reason


def test_fit_reads_gnu_patch(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.c").write_text("".join(f"line {i}\n" for i in range(1, 30)))
    patch = tmp_path / "p.patch"
    patch.write_text("Subject: x\n\n---\n"
                     "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n"
                     "@@ -10,7 +10,7 @@ int f(void)\n line 10\n line 11\n"
                     " line 12\n-line 13\n+LINE 13\n line 14\n line 15\n"
                     " line 16\n"
                     "@@ -20,3 +20,3 @@ int g(void)\n line 20\n-line 21\n"
                     "+LINE 21\n line 22\n")
    text = (root / "a.c").read_text()
    # three lines above the first hunk, its first context line changed
    (root / "a.c").write_text("new\nnew\nnew\n" + text.replace(
        "line 10\n", "line ten\n"))
    f = drift.fit(root, patch, exact=False)
    assert [(h.number, h.offset, h.fuzz, h.failed) for h in f.hunks] == \
        [(1, 3, 1, False), (2, 3, 0, False)]
    assert f.drift() == "a.c: hunk 1 +3 lines, fuzz 1; hunk 2 +3 lines"
    (root / "a.c").write_text(text.replace("line 21\n", "line 2l\n"))
    f = drift.fit(root, patch, exact=False)
    assert drift.describe_failed(f) == "a.c hunk 2 in int g(void) " \
        "(near line 20)"


def test_probe_is_a_line_the_old_patch_did_not_expect() -> None:
    old = ("--- a/m.c\n+++ b/m.c\n@@ -1,3 +1,3 @@\n ctx\n"
           "-\t\tmod_error(mod, \"x\");\n+\t\tnew();\n")
    new = ("--- a/m.c\n+++ b/m.c\n@@ -1,3 +1,3 @@\n ctx\n"
           "-\t\terror(\"%s: x\", mod->name);\n+\t\tnew();\n")
    path, line = drift.probe_for(old, new, ["m.c"])
    assert (path, line) == ("m.c", 'error("%s: x", mod->name);')
    regex = r"^\s*" + drift.regex_of(line) + r"\s*$"
    assert re.search(regex, '\t\terror("%s: x", mod->name);\n', re.M)
    assert not re.search(regex, '\t\terror("%s: x", mod->name, y);\n', re.M)
