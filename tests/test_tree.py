"""nsgen/tree.py: the first snapshot of a plain tree, hashed in parts."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from pathlib import Path

from nsgen import guard, tree
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


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (os.readlink(p).encode()
                                       if p.is_symlink() else p.read_bytes())
            for p in sorted(root.rglob("*"))
            if (p.is_file() or p.is_symlink()) and p.name != ".git"}


def next_release(root: Path) -> tree.KernelTree:
    """A copy of plain_tree's tree with files changed, added, removed."""
    import shutil
    shutil.copytree(root, root.with_name("next"), symlinks=True)
    new = root.with_name("next")
    (new / "drivers/net/n.c").write_text("changed\n")
    (new / "drivers/gpu/drm/new.c").write_text("added\n")
    (new / "tools/t.c").unlink()
    return tree.check_tree(new)


def test_next_release_takes_over_the_last_work_tree(tmp_path: Path) -> None:
    """A new work directory takes the work tree of the last one (its
    build outputs and edits go): the files of the new tree exactly, and
    the old work directory checks its tree out anew on its next run."""
    old = plain_tree(tmp_path / "linux")
    new = next_release(old.path)
    a = tree.make_baseline(old, tmp_path / "a")
    inode = os.stat(a.work / "drivers/gpu/drm/a.c").st_ino
    (a.work / "kernel/module/main.c").write_text("an edit\n")
    (a.work / "drivers/gpu/drm/a.o").write_text("a build output\n")
    b = tree.make_baseline(new, tmp_path / "b", donor=tmp_path / "a")
    assert b.adopted and not a.work.exists()
    assert files_of(b.work) == files_of(new.path)
    assert b.repo.git("status", "--porcelain", "--ignored") == ""
    # moved, not written again
    assert os.stat(b.work / "drivers/gpu/drm/a.c").st_ino == inode
    again = tree.make_baseline(old, tmp_path / "a")
    assert not again.adopted and files_of(again.work) == files_of(old.path)


def test_a_busy_donor_keeps_its_work_tree(tmp_path: Path) -> None:
    old = plain_tree(tmp_path / "linux")
    new = next_release(old.path)
    a = tree.make_baseline(old, tmp_path / "a")
    holder = subprocess.Popen(["flock", str(tmp_path / "a" / guard.LOCK),
                               "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while run(["flock", "-n", str(tmp_path / "a" / guard.LOCK),
                   "true"], check=False).returncode == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        b = tree.make_baseline(new, tmp_path / "b", donor=tmp_path / "a")
    finally:
        holder.kill()
        holder.wait()
    assert not b.adopted and (a.work / ".git").exists()
    assert files_of(b.work) == files_of(new.path)
    assert files_of(a.work) == files_of(old.path)


def test_a_donor_whose_lock_this_run_holds_keeps_its_work_tree(
        tmp_path: Path) -> None:
    """A parent that holds the donor's lock (make check's runs inherit
    it) may be using its work tree: it stays."""
    old = plain_tree(tmp_path / "linux")
    new = next_release(old.path)
    a = tree.make_baseline(old, tmp_path / "a")
    with guard.locked(tmp_path / "a", "WORKDIR"):
        b = tree.make_baseline(new, tmp_path / "b", donor=tmp_path / "a")
    assert not b.adopted and (a.work / ".git").exists()


def test_a_takeover_cut_short_leaves_two_work_trees_that_recover(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted between two moves: each side's next run puts back the
    files its work tree lacks."""
    old = plain_tree(tmp_path / "linux")
    new = next_release(old.path)
    tree.make_baseline(old, tmp_path / "a")
    real, moved = os.rename, []

    def rename(src: "os.PathLike[str]", dst: "os.PathLike[str]") -> None:
        if len(moved) == 3:
            raise KeyboardInterrupt
        moved.append(src)
        real(src, dst)

    monkeypatch.setattr(tree.os, "rename", rename)
    try:
        tree.make_baseline(new, tmp_path / "b", donor=tmp_path / "a")
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("not interrupted")
    monkeypatch.setattr(tree.os, "rename", real)
    assert len(moved) == 3
    b = tree.make_baseline(new, tmp_path / "b", donor=tmp_path / "a")
    assert files_of(b.work) == files_of(new.path)
    a = tree.make_baseline(old, tmp_path / "a")
    assert files_of(a.work) == files_of(old.path)
    assert a.repo.git("status", "--porcelain") == "" == \
        b.repo.git("status", "--porcelain")
