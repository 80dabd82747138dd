"""The tools never harm what they are given: bad input refused in one line
before the slow work, nothing removed that they did not make, one run at a
time on a work directory, a git tree taken as the user sees it, interrupts
that leave the input and OUT as they were or complete."""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import generate
from nsgen import guard
from tests import minitree

PROJECT = Path(__file__).resolve().parent.parent
AUTHOR = "Test Sender <sender@example.org>"
DATE = "2026-12-01T12:00:00+00:00"
GIT_ID = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org",
          "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.org",
          "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE}


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root)).encode()
        if p.is_symlink():
            h.update(rel + b"->" + os.readlink(p).encode())
        elif p.is_file():
            h.update(rel + p.read_bytes() + oct(p.stat().st_mode).encode())
        else:
            h.update(rel)
    return h.hexdigest()


def listing(series: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(series.iterdir())
            if not p.name.startswith(".")}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    ksrc = minitree.make(tmp_path / "linux")
    order = tmp_path / "patches" / "series"
    order.parent.mkdir()
    order.write_text("generate: ns-string\ngenerate: export-for\n")
    return {"ksrc": ksrc, "order": order, "work": tmp_path / "wd",
            "out": tmp_path / "out", "tmp": tmp_path}


def gen_args(env: dict[str, Path], *extra: str, out: Path | None = None,
             author: str = AUTHOR, date: str = DATE) -> list[str]:
    return ["generate", "--ksrc", str(env["ksrc"]), "--workdir",
            str(env["work"]), "--out", str(out or env["out"]), "--jobs", "2",
            "--series-file", str(env["order"]), "--author", author,
            "--date", date, *extra]


def cli(args: list[str], cwd: Path = PROJECT,
        extra_env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """generate.py as a user runs it: its exit status and its stderr."""
    return subprocess.run([sys.executable, str(PROJECT / "generate.py"),
                           *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(extra_env or {})})


def one_line_error(p: subprocess.CompletedProcess[str], status: int,
                   *words: str) -> None:
    assert p.returncode == status, p.stderr
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith(
        "generate.py") or "error" in ln]
    assert len(lines) == 1, p.stderr
    for w in words:
        assert w in lines[0], lines[0]


# --- apply --dest: nothing of the user's is removed ---------------------

def test_apply_refuses_an_existing_dest(env: dict[str, Path]) -> None:
    assert generate.main(gen_args(env)) == 0
    dest = env["tmp"] / "mine"
    dest.mkdir()
    (dest / "notes.txt").write_text("my work\n")
    before = digest(dest)
    p = cli(["apply", "--ksrc", str(env["ksrc"]), "--workdir",
             str(env["work"]), "--series", str(env["out"] / "series"),
             "--dest", str(dest)])
    one_line_error(p, 1, "exists and was not made by 'generate.py apply'")
    assert digest(dest) == before


@pytest.mark.parametrize("where", ["ksrc", "inside", "parent"])
def test_apply_refuses_the_input_tree(env: dict[str, Path], where: str
                                      ) -> None:
    assert generate.main(gen_args(env)) == 0
    before = digest(env["ksrc"])
    dest = {"ksrc": env["ksrc"], "inside": env["ksrc"] / "applied",
            "parent": env["tmp"]}[where]
    p = cli(["apply", "--ksrc", str(env["ksrc"]), "--workdir",
             str(env["work"]), "--series", str(env["out"] / "series"),
             "--dest", str(dest)])
    one_line_error(p, 1, "--dest")
    assert digest(env["ksrc"]) == before


def test_apply_reuses_only_its_own_work_tree(env: dict[str, Path]) -> None:
    assert generate.main(gen_args(env)) == 0
    dest = env["tmp"] / "applied"
    args = ["apply", "--ksrc", str(env["ksrc"]), "--workdir",
            str(env["work"]), "--series", str(env["out"] / "series"),
            "--dest", str(dest)]
    assert cli(args).returncode == 0
    assert cli(args).returncode == 0       # its own: taken again
    other = env["tmp"] / "wd2"             # another WORKDIR's: refused
    p = cli([*args[:4], str(other), *args[5:]])
    one_line_error(p, 1, "exists and was not made")


def test_series_dir_of_the_user_is_not_replaced(env: dict[str, Path]
                                                ) -> None:
    (env["out"] / "series").mkdir(parents=True)
    (env["out"] / "series" / "draft.txt").write_text("mine\n")
    p = cli(gen_args(env))
    one_line_error(p, 1, "was not written by generate.py")
    assert (env["out"] / "series" / "draft.txt").read_text() == "mine\n"
    assert not (env["work"] / "baseline.git").exists()   # before the work


@pytest.mark.parametrize("extra", [None, "draft.txt", "foreign-id"])
def test_a_series_of_an_earlier_generator_is_replaced(
        env: dict[str, Path], extra: str | None) -> None:
    """A series written before the markers existed (only NNNN-*.patch, the
    generator's Message-ID) is taken over; with a file of the user's in it,
    or a cover letter the generator did not write, it is refused."""
    assert generate.main(gen_args(env)) == 0
    series = env["out"] / "series"
    (series / guard.MARKER).unlink()
    (series / "who-to-ask.txt").unlink()    # which no earlier one wrote
    (series / ".ns-series.json").unlink()   # nor this
    if extra == "draft.txt":
        (series / extra).write_text("mine\n")
    elif extra == "foreign-id":
        cover = series / "0000-cover-letter.patch"
        cover.write_text(cover.read_text().replace(
            "Message-ID: <ns-series-", "Message-ID: <b4-"))
    before = listing(series)
    p = cli(gen_args(env))
    if extra is None:
        assert p.returncode == 0, p.stderr
        assert guard.owned(series)
    else:
        one_line_error(p, 1, "was not written by generate.py")
        assert listing(series) == before


def test_a_new_work_directory_is_marked(env: dict[str, Path]) -> None:
    """make distclean removes the marked directories of WORKDIR only."""
    assert generate.main(gen_args(env)) == 0
    assert guard.owned(env["work"])
    mine = env["tmp"] / "used-before"
    (mine / "baseline.git").mkdir(parents=True)
    args = gen_args(env)
    args[args.index("--workdir") + 1] = str(mine)
    assert generate.main(args) == 0
    assert not guard.owned(mine)       # not made by this run: not claimed


def test_remove_refuses_unmarked(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "f").write_text("x")
    with pytest.raises(guard.ToolError, match="refusing to remove"):
        guard.remove(d)
    assert (d / "f").exists()
    guard.mark(tmp_path / "m")
    guard.remove(tmp_path / "m")
    assert not (tmp_path / "m").exists()


# --- bad input: one line, before the slow work, nothing created ----------

def bad_cases(env: dict[str, Path]) -> list[tuple[list[str], int, str]]:
    afile = env["tmp"] / "a-file"
    afile.write_text("")
    return [
        (gen_args(env, author="nobody"), 1, "expected \"Name <email>\""),
        (gen_args(env, date="yesterday"), 1, "expected RFC 2822 or ISO"),
        (gen_args(env, out=afile / "out"), 1, "OUT="),
        (gen_args(env, "--jobs", "0"), 2, "must be 1 or more"),
        (gen_args(env, "--jobs", "-1"), 2, "must be 1 or more"),
        (gen_args(env, "--jobs", "two"), 2, "not a whole number"),
        (["generate", "--ksrc", "", "--workdir", str(env["work"])], 1,
         "KSRC is empty"),
        (["generate", "--ksrc", str(env["tmp"] / "nope"), "--workdir",
          str(env["work"])], 1, "no such directory"),
        (["bogus"], 2, "invalid choice"),
    ]


def test_bad_input_is_refused_before_the_work(env: dict[str, Path]) -> None:
    before = digest(env["ksrc"])
    for args, status, words in bad_cases(env):
        for dry in ([], ["--dry-run"]) if args[0] == "generate" else ([],):
            p = cli([*args, *dry])
            one_line_error(p, status, words)
            assert not (env["work"] / "baseline.git").exists(), args
            assert not (env["out"] / "series").exists(), args
    assert digest(env["ksrc"]) == before


def test_impossible_workdir(env: dict[str, Path]) -> None:
    afile = env["tmp"] / "a-file"
    afile.write_text("")
    args = gen_args(env)
    args[args.index("--workdir") + 1] = str(afile / "wd")
    one_line_error(cli(args), 1, "WORKDIR=", "not writable")


def test_plain_tree_without_a_date(env: dict[str, Path]) -> None:
    args = gen_args(env)
    args[args.index("--date") + 1] = ""
    one_line_error(cli(args), 1, "no date to give the patches", "DATE=")
    assert not (env["work"] / "baseline.git").exists()


def test_workdir_that_holds_the_tree(env: dict[str, Path]) -> None:
    """KSRC=/tree/ once made the per-tree work directory the shared one,
    which holds the unpacked trees."""
    args = gen_args(env)
    args[args.index("--workdir") + 1] = str(env["tmp"])
    one_line_error(cli(args), 1, "contains KSRC")
    args[args.index("--workdir") + 1] = str(env["ksrc"] / "wd")
    one_line_error(cli(args), 1, "inside KSRC")
    assert not (env["ksrc"] / "wd").exists()


def test_check_needs_a_git_tree(env: dict[str, Path]) -> None:
    plain = env["tmp"] / "plain"
    plain.mkdir()
    base = ["check", "--ksrc", str(env["ksrc"]), "--workdir",
            str(env["work"])]
    one_line_error(cli([*base, "--tree", str(plain)]), 1,
                   "not a git work tree")
    one_line_error(cli([*base, "--tree", str(env["tmp"] / "missing")]), 1,
                   "no such directory")


def test_a_date_without_zone_is_utc(env: dict[str, Path]) -> None:
    assert generate.main(gen_args(env, date="2026-12-01 12:00")) == 0
    patch = next(p for n, p in listing(env["out"] / "series").items()
                 if n.startswith("0001"))
    assert b"Date: Tue, 1 Dec 2026 12:00:00 +0000" in patch


# --- a git tree is what the user sees ------------------------------------

def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True,
                          capture_output=True, text=True,
                          env={**os.environ, **GIT_ID}).stdout


@pytest.fixture
def gitenv(env: dict[str, Path]) -> dict[str, Path]:
    ksrc = env["ksrc"]
    (ksrc / ".gitignore").write_text("*.o\n/build-out/\n")
    git(ksrc, "init", "-q")
    git(ksrc, "add", "-A")
    git(ksrc, "commit", "-q", "-m", "base")
    return env


def cover(env: dict[str, Path]) -> str:
    return (env["out"] / "series" / "0000-cover-letter.patch").read_text()


def test_clean_git_tree_names_its_head(gitenv: dict[str, Path]) -> None:
    (gitenv["ksrc"] / "drivers/foo/foo.o").write_text("build output\n")
    assert generate.main(gen_args(gitenv)) == 0
    tree = git(gitenv["ksrc"], "rev-parse", "HEAD^{tree}").strip()
    head = git(gitenv["ksrc"], "rev-parse", "HEAD").strip()
    assert f"git: HEAD {head[:12]}, tree {tree[:12]}" in cover(gitenv)
    # the build output is ignored: not in the baseline
    snap = subprocess.run(["git", f"--git-dir={gitenv['work']}/baseline.git",
                           "ls-files"], capture_output=True, text=True,
                          check=True).stdout
    assert "drivers/foo/foo.o" not in snap.split()


@pytest.mark.parametrize("change", ["modified", "untracked", "deleted"])
def test_dirty_git_tree_is_refused(gitenv: dict[str, Path], change: str
                                   ) -> None:
    ksrc = gitenv["ksrc"]
    if change == "modified":
        (ksrc / "drivers/foo/foo.h").write_text("/* mine */\n")
    elif change == "untracked":
        (ksrc / "drivers/foo/new.c").write_text("int x;\n")
    else:
        (ksrc / "drivers/foo/foo.h").unlink()
    before = digest(ksrc)
    p = cli(gen_args(gitenv))
    one_line_error(p, 1, "has local changes", "--allow-dirty")
    assert ("foo.h" in p.stderr) if change != "untracked" else \
        ("drivers/foo/new.c" in p.stderr)
    assert not (gitenv["work"] / "baseline.git").exists()
    assert digest(ksrc) == before
    assert generate.main(gen_args(gitenv, "--allow-dirty")) == 0
    assert "plus local changes in 1 file(s) (--allow-dirty)" in cover(gitenv)
    assert digest(ksrc) == before


# --- one run at a time ---------------------------------------------------

def hold(path: Path) -> int:
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / guard.LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_busy_workdir_no_wait(env: dict[str, Path]) -> None:
    fd = hold(env["work"])
    try:
        p = cli(gen_args(env, "--no-wait"))
        one_line_error(p, 1, "is in use by another run")
    finally:
        os.close(fd)
    assert not (env["out"] / "series").exists()


def test_busy_workdir_waits(env: dict[str, Path]) -> None:
    fd = hold(env["work"])
    proc = subprocess.Popen([sys.executable, str(PROJECT / "generate.py"),
                             *gen_args(env)], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()     # waits for the condition itself
        assert "waiting for another run" in line
        assert proc.poll() is None and not (env["out"] / "series").exists()
    finally:
        os.close(fd)
    proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert (env["out"] / "series" / "0000-cover-letter.patch").is_file()


def test_concurrent_runs_give_correct_series(env: dict[str, Path]) -> None:
    ref = env["tmp"] / "ref"
    assert generate.main(gen_args(env, out=ref)) == 0
    expected = listing(ref / "series")
    for trial in range(3):
        outs = [env["tmp"] / f"o{trial}-{n}" for n in range(2)]
        procs = [subprocess.Popen([sys.executable,
                                   str(PROJECT / "generate.py"),
                                   *gen_args(env, "--recompute", out=o)],
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
                 for o in outs]
        for proc, o in zip(procs, outs):
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
            assert listing(o / "series") == expected


# --- interrupts ------------------------------------------------------------

POINTS = ["first run on this tree: snapshotting", "baseline ",
          "generated ns-string", "get_maintainer.pl on"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("point", POINTS)
def test_interrupt_leaves_input_and_out(env: dict[str, Path], sig: int,
                                        point: str) -> None:
    old_out = env["tmp"] / "old"
    assert generate.main(gen_args(env, out=old_out,
                                  date="2026-01-01T00:00:00+00:00")) == 0
    new_out = env["tmp"] / "new"
    assert generate.main(gen_args(env, out=new_out)) == 0
    old, new = listing(old_out / "series"), listing(new_out / "series")
    assert old != new
    if point.startswith("first run"):
        import shutil
        shutil.rmtree(env["work"])
    before = digest(env["ksrc"])
    proc = subprocess.Popen([sys.executable, str(PROJECT / "generate.py"),
                             *gen_args(env, out=old_out)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if point in line:
            proc.send_signal(sig)
            break
    proc.stderr.read()
    status = proc.wait(timeout=120)
    assert status in (0, 130, 143), status
    assert digest(env["ksrc"]) == before
    assert listing(old_out / "series") in (old, new)
    assert sorted(p.name for p in old_out.iterdir()
                  if p.name != guard.LOCK) == ["series"]
