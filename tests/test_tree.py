"""nsgen/tree.py: the first snapshot of a plain tree, hashed in parts."""

from __future__ import annotations

import os
from pathlib import Path

from nsgen import tree
from nsgen.run import run

FILES = ("Makefile", "include/linux/export.h", "include/linux/module.h",
         "kernel/module/main.c", "scripts/mod/modpost.c",
         "drivers/gpu/drm/a.c", "drivers/gpu/drm/b.h", "drivers/net/n.c",
         "drivers/gpu.c", "arch/x86/kvm/x.c", "tools/t.c",
         "Documentation/d.rst", "drivers-extra/e.c", "z.c")


def plain_tree(root: Path) -> tree.KernelTree:
    for n, f in enumerate(FILES):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text(f"VERSION = 6\nPATCHLEVEL = 12\n{n}\n")
    (root / ".gitignore").write_text("/*\n")          # Debian's tarball
    (root / "tools/run.sh").write_text("#!/bin/sh\n")
    (root / "tools/run.sh").chmod(0o755)
    os.symlink("../drivers/net/n.c", root / "arch/link.c")
    return tree.check_tree(root)


def ls(repo: tree.Repo, index: Path | None = None) -> str:
    env = {**tree.GIT_ENV, "GIT_INDEX_FILE": str(index)} if index else \
        tree.GIT_ENV
    return run([*repo.argv(), "ls-files", "-s", "--debug"],
               cwd=repo.work_tree, env=env).stdout


def test_first_snapshot_in_parts_is_one_git_add(tmp_path: Path) -> None:
    """The parts' indexes merged are the index one git add writes, stat
    data and all: the next git add hashes nothing (git diff-files, which
    compares stat data only, finds no file changed)."""
    ksrc = plain_tree(tmp_path / "linux")
    parts = tree._pathspecs(ksrc.path)
    assert parts[0] == ["drivers/gpu"]
    assert parts[1] == ["drivers", ":(exclude)drivers/gpu"]
    snap, commit, tree_id = tree.snapshot(ksrc, tmp_path / "wd")
    one = tmp_path / "one-index"
    run([*snap.argv(), "add", "-f", "-A", "--", "."], cwd=ksrc.path,
        env={**tree.GIT_ENV, "GIT_INDEX_FILE": str(one)})
    assert ls(snap) == ls(snap, one)
    assert len(ls(snap).split("\n  ctime")) == len(FILES) + 4
    assert snap.git("diff-files", "--name-only") == ""
    assert snap.git("ls-tree", "-r", "--name-only", tree_id).split() == \
        sorted(f for f in [*FILES, ".gitignore", "tools/run.sh",
                           "arch/link.c"])
    # a second snapshot of the same tree: the same commit
    assert tree.snapshot(ksrc, tmp_path / "wd")[1] == commit


def test_merge_refuses_a_path_in_two_parts(tmp_path: Path) -> None:
    ksrc = plain_tree(tmp_path / "linux")
    snap = tree.snapshot(ksrc, tmp_path / "wd")[0]
    index = snap.git_dir / "index"
    try:
        tree.merge_indexes([index, index], tmp_path / "merged")
    except ValueError as e:
        assert "two parts" in str(e)
    else:
        raise AssertionError("merged a path twice")
