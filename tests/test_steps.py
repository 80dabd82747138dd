"""Step decisions (nsgen/steps.py) on small trees shaped like each kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nsgen import series, steps  # noqa: E402
from nsgen.run import ToolError  # noqa: E402
from nsgen.tree import Repo  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
STEP = "0001-table.patch"
CONF = f"""[{STEP}]
offenders: yes
already: kernel/module/main.c ^static const char \\*const upstream_table\\[\\] -- upstream has the table
variant: old kernel/module/main.c ^static int old_place\\( -- the exceptions are in old_place()
needs: kernel/module/main.c ^static void new_place\\( -- the exceptions are in new_place()
"""


def patch(old: str, new: str) -> str:
    return ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            "From: A <a@example.invalid>\nDate: Sat, 1 Jan 2000 00:00:00 +0000\n"
            "Subject: [PATCH] module: a table\n\n---\n"
            "diff --git a/kernel/module/main.c b/kernel/module/main.c\n"
            "--- a/kernel/module/main.c\n+++ b/kernel/module/main.c\n"
            f"@@ -1 +1,2 @@\n-{old}\n+{new}\n+\t\"some_offender\",\n")


@pytest.fixture
def patches(tmp_path: Path) -> Path:
    d = tmp_path / "patches"
    (d / "old").mkdir(parents=True)
    (d / "steps.conf").write_text(CONF)
    (d / STEP).write_text(patch("static void new_place(void)",
                                "static void new_place(int x)"))
    (d / "old" / STEP).write_text(patch("static int old_place(void)",
                                        "static int old_place(int x)"))
    return d


def tree(tmp_path: Path, main_c: str, makefile: str = "") -> Repo:
    root = tmp_path / "tree"
    (root / "kernel/module").mkdir(parents=True)
    (root / "kernel/module/main.c").write_text(main_c + "\n")
    if makefile:
        (root / "drivers/x").mkdir(parents=True)
        (root / "drivers/x/Makefile").write_text(makefile)
    repo = Repo(root / ".git", root)
    repo.git("init", "-q")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "base")
    return repo


def decide(repo: Repo, patches: Path) -> steps.Decision:
    rules = steps.read_rules(patches / "steps.conf")
    steps.check_rules(rules, patches, [STEP])
    return steps.decide(repo, patches, STEP, rules[STEP])


def test_tree_the_patch_was_written_for(tmp_path: Path, patches: Path) -> None:
    d = decide(tree(tmp_path, "static void new_place(void)"), patches)
    assert d.kind is steps.Kind.APPLIES
    assert d.patch == patches / STEP
    assert d.line() == "applies: the exceptions are in new_place()"


def test_older_tree_takes_the_variant(tmp_path: Path, patches: Path) -> None:
    d = decide(tree(tmp_path, "static int old_place(void)"), patches)
    assert d.kind is steps.Kind.VARIANT
    assert d.patch == patches / "old" / STEP
    assert d.line().startswith("applies in the variant old: ")


def test_upstream_already_has_it(tmp_path: Path, patches: Path) -> None:
    d = decide(tree(tmp_path, "static const char *const upstream_table[] = {"),
               patches)
    assert d.kind is steps.Kind.ALREADY
    assert d.reason == "upstream has the table"
    assert d.patch is None


def test_no_variant_fits(tmp_path: Path, patches: Path) -> None:
    d = decide(tree(tmp_path, "static void elsewhere(void)"), patches)
    assert d.kind is steps.Kind.REFUSED
    assert d.reason.startswith("no variant fits this tree (looked for "
                               "kernel/module/main.c ~ ")


def test_fits_but_does_not_apply(tmp_path: Path, patches: Path) -> None:
    d = decide(tree(tmp_path, "/* x */\nstatic void new_place(void) {}"),
               patches)
    assert d.kind is steps.Kind.REFUSED
    assert "fits this tree but does not apply: kernel/module/main.c hunk 1" \
        in d.reason


@pytest.mark.parametrize("makefile", [
    "obj-$(CONFIG_X) += some_offender.o\n",
    "obj-m\t+= some-offender.o\n",          # '-' and '_' are one
    "obj-y += foo.o\nobj-$(CONFIG_Y) +=\tbar/some_offender.o\n",
])
def test_offender_built_by_the_tree_is_refused(tmp_path: Path, patches: Path,
                                               makefile: str) -> None:
    d = decide(tree(tmp_path, "static void new_place(void)", makefile), patches)
    assert d.kind is steps.Kind.REFUSED
    assert d.reason.startswith("some_offender is a module this tree builds")


@pytest.mark.parametrize("makefile", [
    "obj-$(CONFIG_X) += other_offender.o\n",     # a longer name
    "obj-$(CONFIG_X) += some_offenderx.o\n",
    "some_offender-y := a.o\n",                  # not an obj- line
])
def test_other_modules_do_not_count(tmp_path: Path, patches: Path,
                                    makefile: str) -> None:
    d = decide(tree(tmp_path, "static void new_place(void)", makefile), patches)
    assert d.kind is steps.Kind.APPLIES


def test_bad_conf_lines(tmp_path: Path) -> None:
    conf = tmp_path / "steps.conf"
    for text in ("already: x y\n", f"[{STEP}]\nalready: f ^( -- why\n",
                 f"[{STEP}]\nvariant: a/b f x -- why\n",
                 f"[{STEP}]\nneeds: f x\n"):
        conf.write_text(text)
        with pytest.raises(ToolError):
            steps.read_rules(conf)


def test_missing_variant_file(patches: Path) -> None:
    (patches / "old" / STEP).unlink()
    with pytest.raises(ToolError, match="old/0001-table.patch does not exist"):
        steps.check_rules(steps.read_rules(patches / "steps.conf"), patches,
                          [STEP])


def test_project_conf_names_real_steps_and_files() -> None:
    patch_dir = PROJECT / "patches"
    order = series.read_order(patch_dir / "series", {"ns-string", "export-for"})
    names = [e.name for e in order if e.kind == "patch"]
    rules = steps.read_rules(patch_dir / "steps.conf")
    steps.check_rules(rules, patch_dir, names)
    assert set(rules) == set(names)
    assert rules["0002-module-treat-Tuxedo-s-modules-as-proprietary.patch"] \
        .offenders


def test_modules_built_asks_once_for_many_names(tmp_path: Path) -> None:
    repo = tree(tmp_path, "", "obj-m += clevo-wmi.o tuxedo_nb04_wmi_ab.o\n"
                "obj-$(CONFIG_X) += uniwill_wmi.o\n")
    names = ["tuxedo_io", "clevo_wmi", "tuxedo_nb04*", "uniwill_wmi",
             "uniwill"]
    assert steps.modules_built(repo, names) == [
        "clevo_wmi", "tuxedo_nb04*", "uniwill_wmi"]
    assert steps.modules_built(repo, []) == []
