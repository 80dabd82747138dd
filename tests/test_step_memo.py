"""nsgen/convert.py run_step(): a generated step's result is replayed for
the same tree and code, and computed again otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsgen import convert, tree
from tests import minitree


@pytest.fixture
def work(tmp_path: Path) -> tree.Repo:
    ksrc = tree.check_tree(minitree.make(tmp_path / "linux"))
    return tree.make_baseline(ksrc, tmp_path / "wd").repo


def fake_step(calls: list[str]):
    def step(repo: tree.Repo, spatch_bin: str, version: str, jobs: int,
             cache: Path) -> convert.StepResult:
        assert repo.work_tree is not None
        calls.append(repo.git("rev-parse", "HEAD^{tree}").strip())
        f = repo.work_tree / "drivers/foo/foo.c"
        f.write_text(f.read_text().replace("FOO)", '"FOO")'))
        repo.git("add", "-f", "-A", "--", ".")
        return convert.StepResult("fake", convert.Status.CHANGED,
                                  subject="s", message="s\n\nbody\n",
                                  files=["drivers/foo/foo.c"], notes=["n"])
    return step


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The trees the fake step ran from; the step registered as 'fake'."""
    seen: list[str] = []
    monkeypatch.setitem(convert.STEPS, "fake", fake_step(seen))
    return seen


def test_replayed_for_the_same_tree_and_code(work: tree.Repo, tmp_path: Path,
                                             calls: list[str]) -> None:
    cache = tmp_path / "cache"
    start = work.git("rev-parse", "HEAD").strip()
    first = convert.run_step("fake", work, "spatch", "1.1.1", 1, cache)
    staged = work.git("write-tree").strip()
    assert not first.replayed and len(calls) == 1

    tree.reset(work, start)
    again = convert.run_step("fake", work, "spatch", "1.1.1", 1, cache)
    assert again.replayed and len(calls) == 1
    assert work.git("write-tree").strip() == staged
    assert work.git("status", "--porcelain").strip() == \
        "M  drivers/foo/foo.c"            # staged, and in the work tree
    assert (again.message, again.files, again.notes) == \
        (first.message, first.files, first.notes)

    tree.reset(work, start)
    convert.run_step("fake", work, "spatch", "1.1.1", 1, cache,
                     recompute=True)
    assert len(calls) == 2
    tree.reset(work, start)
    convert.run_step("fake", work, "spatch", "1.1.2", 1, cache)  # spatch
    assert len(calls) == 3


def test_computed_again_for_another_tree(work: tree.Repo, tmp_path: Path,
                                         calls: list[str]) -> None:
    cache = tmp_path / "cache"
    start = work.git("rev-parse", "HEAD").strip()
    convert.run_step("fake", work, "spatch", "1.1.1", 1, cache)
    tree.reset(work, start)
    assert work.work_tree is not None
    (work.work_tree / "kernel/module/main.c").write_text("/* changed */\n")
    work.git("commit", "-q", "-a", "-m", "another tree")
    convert.run_step("fake", work, "spatch", "1.1.1", 1, cache)
    assert len(calls) == 2 and calls[0] != calls[1]
