"""The treewide recipe's sed commands (nsgen/recipe.py), run with sed, and
the subject style of generated commits (nsgen/subject.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nsgen import recipe, subject

LINES = [
    ("EXPORT_SYMBOL_NS_GPL(peci_x, PECI);", 'EXPORT_SYMBOL_NS_GPL(peci_x, "PECI");'),
    # the changed word also occurs earlier in the line: the whole line
    ("MODULE_IMPORT_NS(FOO); /* FOO */ FOO", 'MODULE_IMPORT_NS(FOO); /* FOO */ "FOO"'),
    ("#define X(ns) __stringify(ns)", "#define X(ns) ns"),
    ("my $re = '^\\s*EXPORT_SYMBOL_NS(_GPL)?\\s*\\(\\s*(\\w+)\\s*,\\s*\\w+\\)';",
     "my $re = '^\\s*EXPORT_SYMBOL_NS(_GPL)?\\s*\\(\\s*(\\w+)\\s*,\\s*\"[^\"]+\"\\)';"),
    ("a/b & c [x] $1 .* ^", "a/b & c [x] \\\"$1\\\" .* ^"),
]


@pytest.mark.parametrize("old,new", LINES)
def test_sed_command_makes_the_line(tmp_path: Path, old: str, new: str) -> None:
    f = tmp_path / "f"
    f.write_text(f"first\n{old}\nlast\n")
    cmds = recipe.file_commands(f.read_text(), f"first\n{new}\nlast\n")
    assert cmds is not None and len(cmds) == 1
    subprocess.run(["sed", "-i", "-e", cmds[0], str(f)], check=True)
    assert f.read_text() == f"first\n{new}\nlast\n"


def test_lines_added_are_not_sed() -> None:
    assert recipe.file_commands("a\nb\n", "a\nx\nb\n") is None


def test_lines_removed_are_sed(tmp_path: Path) -> None:
    old = "keep\n# one\n# two\nVAR ?= y\nifneq ($(A)$(VAR),)\nend\n"
    new = "keep\n# one.\nifneq ($(A),)\nend\n"
    f = tmp_path / "Makefile.lib"
    f.write_text(old)
    cmds = recipe.file_commands(old, new)
    assert cmds is not None
    subprocess.run(["sed", "-i", *[a for c in cmds for a in ("-e", c)],
                    str(f)], check=True)
    assert f.read_text() == new


def test_extract_strips_the_indent_and_stops_at_the_end() -> None:
    body = recipe.script("// rule\n\n\n@@\n@@\n", "#define A 1\n", ["-D", "x"],
                         ["FOO"], [], ["sed -i -e '1s/a/b/' f"])
    message = "subject\n\n" + "".join(f"    {line}\n" if line else "\n"
                                      for line in body.split("\n")) + "after\n"
    assert recipe.extract(message) == body
    assert "\n\n\n" not in body
    with pytest.raises(ValueError):
        recipe.extract("no recipe\n")


MAINTAINERS = """\
X86 ARCHITECTURE (32-BIT AND 64-BIT)
M:\tSomeone <someone@example.org>
T:\tgit git://git.kernel.org/pub/scm/linux/kernel/git/tip/tip.git x86/core
F:\tarch/x86/

MODULE SUPPORT
M:\tOther <other@example.org>
F:\tkernel/module/
"""


def test_subject_follows_the_subsystem(tmp_path: Path) -> None:
    (tmp_path / "MAINTAINERS").write_text(MAINTAINERS)
    assert subject.subject(tmp_path, "arch/x86/kernel/fpu/core.c",
                           "export f() only to kvm") == \
        "x86/fpu: Export f() only to kvm"
    assert subject.subject(tmp_path, "arch/x86/mm/fault.c", "fix it") == \
        "x86/mm: Fix it"
    assert subject.subject(tmp_path, "kernel/module/main.c",
                           "Add a check") == "module: add a check"


def test_long_words_are_cut_and_joined_again() -> None:
    words = ["-e", "x" * 30 + "'quote'" + "y" * 100 + "$dollar\\back",
             "short", "-e", "z" * 64, "-D", "ns_macros=" + ",".join(
                 f"NAME_{i}" for i in range(40))]
    lines = recipe.command(["printf", "%s\\n"], words)
    assert all(len(line) <= recipe.WIDTH for line in lines)
    out = subprocess.run(["sh", "-c", "\n".join(lines)], check=True,
                         capture_output=True, text=True).stdout
    assert out.split("\n")[:-1] == words
