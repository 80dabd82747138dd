"""setup.sh and the Makefile's front door refuse bad input before any slow
work: no network, no Debian package, no kernel tree.

apt-get, apt-cache, dpkg-query and dpkg-deb are fakes on PATH that record
every call.  The fake apt-get downloads nothing (its 'update' writes small
Packages lists); the fake apt-cache answers for the machine's own apt
(linux-source-6.1 and -6.12) and hands the private configuration's calls to
the real apt-cache, which reads the small lists as it would Debian's.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import select
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SETUP = PROJECT / "setup.sh"
MARKER = ".ns-series-owned"
REAL_APT_CACHE = shutil.which("apt-cache")

pytestmark = pytest.mark.skipif(
    REAL_APT_CACHE is None or shutil.which("flock") is None
    or shutil.which("make") is None,
    reason="needs Debian's apt-cache, util-linux's flock and make")

# What Debian's newer suites list, as the fake 'apt-get update' writes it.
SUITES = {
    "trixie": [("linux-source-6.12", "6.12.57-1")],
    "trixie-backports": [("linux-source-7.2", "7.2.12-1~bpo13+1"),
                         ("linux-source-7.3", "7.3.4-1~bpo13+1")],
    "sid": [("linux-source-7.3", "7.3.5-1")],
}
LISTED = "6.1, 6.12, 7.2, 7.3"   # the lists' lines and the machine's own

FAKE_APT_GET = r"""#!/bin/bash
echo "apt-get $*" >>"$FAKE_LOG"
lists=
for a in "$@"; do
	case "$a" in Dir::State::Lists=*) lists=${a#*=} ;; esac
done
for a in "$@"; do
	if [ "$a" = update ] && [ -n "$lists" ]; then
		cp "$FAKE_LISTS"/* "$lists"/
		exit 0
	fi
done
echo "fake apt-get: no network here" >&2
exit 100
"""

FAKE_APT_CACHE = r"""#!/bin/bash
echo "apt-cache $*" >>"$FAKE_LOG"
case "$*" in *Dir::State::Lists=*) exec "$REAL_APT_CACHE" "$@" ;; esac
case "$1" in
pkgnames) printf 'linux-source-6.1\nlinux-source-6.12\n' ;;
policy)
	case "$2" in
	linux-source-6.1|linux-source-6.12)
		printf '%s:\n  Installed: (none)\n  Candidate: 1.0\n' "$2" ;;
	esac ;;
esac
exit 0
"""

FAKE_DPKG_QUERY = r"""#!/bin/bash
echo "dpkg-query $*" >>"$FAKE_LOG"
pkg=${!#}
case "$pkg" in linux-source-*) exit 1 ;; esac
printf 'install ok installed'
"""

FAKE_DPKG_DEB = r"""#!/bin/bash
echo "dpkg-deb $*" >>"$FAKE_LOG"
exit 2
"""


class Env:
    """A scratch WORKDIR, OUT and home, and the fakes' call log."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.workdir = tmp / "work"
        self.src = self.workdir / "src"
        self.out = tmp / "out"
        self.home = tmp / "home"
        self.home.mkdir()
        self.log = tmp / "calls.log"
        self.log.write_text("")
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        for name, text in (("apt-get", FAKE_APT_GET),
                           ("apt-cache", FAKE_APT_CACHE),
                           ("dpkg-query", FAKE_DPKG_QUERY),
                           ("dpkg-deb", FAKE_DPKG_DEB)):
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        self.lists = tmp / "lists"
        self.lists.mkdir()
        arch = subprocess.run(["dpkg", "--print-architecture"],
                              capture_output=True, text=True,
                              check=True).stdout.strip()
        for suite, packages in SUITES.items():
            text = "".join(
                f"Package: {p}\nArchitecture: all\nVersion: {v}\n"
                f"Filename: pool/main/l/linux/{p}_{v}_all.deb\n"
                "Size: 1000\nDescription: Linux kernel source\n\n"
                for p, v in packages)
            (self.lists / f"deb.debian.org_debian_dists_{suite}_main_"
             f"binary-{arch}_Packages").write_text(text)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL",
                                 "DEBIAN_MIRROR", "KVER", "KSRC", "WORKDIR",
                                 "OUT", "CHECK_KERNELS")}
        self.env.update(PATH=f"{bin_dir}:{os.environ['PATH']}",
                        HOME=str(self.home), FAKE_LOG=str(self.log),
                        FAKE_LISTS=str(self.lists),
                        REAL_APT_CACHE=str(REAL_APT_CACHE), LC_ALL="C")

    def calls(self, prefix: str = "") -> list[str]:
        return [c for c in self.log.read_text().splitlines()
                if c.startswith(prefix)]

    def private_lists(self) -> None:
        """The private lists an earlier run fetched."""
        lists = self.src / ".apt" / "lists"
        lists.mkdir(parents=True)
        for f in self.lists.iterdir():
            shutil.copy(f, lists / f.name)

    def setup(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(SETUP), *args], cwd=self.tmp,
                              env=self.env, capture_output=True, text=True,
                              timeout=120)

    def make(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "--no-print-directory", "-C", str(PROJECT),
             f"WORKDIR={self.workdir}", f"OUT={self.out}", *args],
            env=self.env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def error_line(p: subprocess.CompletedProcess[str]) -> str:
    """setup.sh's stderr, which must be one line."""
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


# make help and a make -n fetch nothing

@pytest.mark.parametrize("args", [
    ["help", "KVER=5.x"], ["help", "KVER=7.x"], ["-n", "help", "KVER=5.x"],
    ["-n", "help", "KVER=7.x"], ["print-TREE_WORKDIR", "KVER=7.x"]])
def test_help_fetches_nothing(env: Env, args: list[str]) -> None:
    p = env.make(*args)
    assert p.returncode == 0, p.stderr
    assert env.calls() == []
    assert not env.workdir.exists()


def test_help_shows_kver_as_given(env: Env) -> None:
    p = env.make("help", "KVER=5.x")
    assert "KVER=5.x" in p.stdout
    assert "make distclean" in p.stdout
    assert env.calls() == []


def test_make_n_shows_the_tree_command_without_running_it(env: Env) -> None:
    p = env.make("-n", "series", "KVER=7.x")
    assert p.returncode == 0, p.stderr
    assert f'./setup.sh tree "7.x" "{env.src}"' in p.stdout
    assert env.calls() == []


# KVER's form: checked first, offline, one line

BAD_FORMS = ["5", "6.12.x", "latest", "", "7.x.1", "6.12;id", "../6.12",
             "6.12 ", "7.2.12", "x.x"]
GOOD_FORMS = ["6.12", "6.1", "7.x", "7.2.12-1~bpo13+1",
              "6.12.118-1~deb12u1", "7.3~rc7-1~exp1", "6.1.192-3"]


@pytest.mark.parametrize("command", ["tree", "source", "resolve"])
@pytest.mark.parametrize("kver", BAD_FORMS)
def test_bad_kver_form_refused_first(env: Env, command: str,
                                     kver: str) -> None:
    p = env.setup(command, kver, str(env.src))
    assert p.returncode == 1
    assert error_line(p) == (
        f"setup.sh: error: KVER={kver}: expected N.M (6.12), N.x (the newest "
        "N.*: 7.x) or a Debian package version (7.2.12-1~bpo13+1)")
    assert env.calls() == []
    assert not env.workdir.exists()


def test_good_kver_forms_accepted(env: Env) -> None:
    p = env.setup("kver", *GOOD_FORMS)
    assert p.returncode == 0, p.stderr
    assert env.calls() == []


def test_make_refuses_bad_kver_before_installing(env: Env) -> None:
    p = env.make("series", "KVER=6.12.x")
    assert p.returncode != 0
    assert "setup.sh: error: KVER=6.12.x: expected N.M (6.12)" in p.stderr
    assert env.calls() == []      # not even dpkg-query: deps did not run
    assert not env.workdir.exists()


@pytest.mark.parametrize("target", ["check", "check-kernels"])
def test_make_check_refuses_bad_check_kernels_first(env: Env,
                                                    target: str) -> None:
    p = env.make(target, "CHECK_KERNELS=6.1,7")
    assert p.returncode != 0
    assert "setup.sh: error: KVER=7: expected" in p.stderr
    assert env.calls() == []


# A kernel Debian does not serve: said from the lists already here

LAST_FETCHED = re.compile(
    r"setup\.sh: error: no (?P<what>\S+) in Debian's archive as last "
    r"fetched \(bookworm bookworm-backports trixie trixie-backports sid "
    r"experimental bookworm-security trixie-security on "
    r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"
    r" in (?P<lists>\S+), and this machine's apt sources\); "
    r"listed: (?P<listed>.*)")


@pytest.mark.parametrize("command,kver,what,listed", [
    ("tree", "5.10", "linux-source-5.10", LISTED),
    ("source", "5.10", "linux-source-5.10", LISTED),
    ("tree", "5.x", "linux-source-5.*", LISTED),
    ("resolve", "8.x", "linux-source-8.*", LISTED),
    ("tree", "7.2.99-1", "linux-source-7.2=7.2.99-1", "7.2.12-1~bpo13+1"),
    ("source", "5.10.1-1", "linux-source-5.10", LISTED),
])
def test_unknown_kver_named_from_existing_lists(
        env: Env, command: str, kver: str, what: str, listed: str) -> None:
    env.private_lists()
    p = env.setup(command, kver, str(env.src))
    assert p.returncode == 1
    m = LAST_FETCHED.fullmatch(error_line(p))
    assert m, p.stderr
    assert m["what"] == what
    assert m["lists"] == str(env.src / ".apt" / "lists")
    assert m["listed"] == listed
    assert env.calls("apt-get") == []
    assert env.calls("dpkg-query") == []     # refused before deps


def test_make_unknown_kver_downloads_nothing(env: Env) -> None:
    env.private_lists()
    p = env.make("series", "KVER=5.10")
    assert p.returncode != 0
    assert any(LAST_FETCHED.fullmatch(line) for line in p.stderr.splitlines())
    assert f"listed: {LISTED}" in p.stderr
    assert env.calls("apt-get") == []


def test_lists_fetched_once_when_there_are_none(env: Env) -> None:
    p = env.setup("tree", "5.10", str(env.src))
    assert p.returncode == 1
    first, last = p.stderr.splitlines()
    assert first.startswith("setup.sh: linux-source-5.10 is not in this "
                            "machine's apt lists; fetching the lists of "
                            "bookworm bookworm-backports trixie "
                            "trixie-backports sid experimental "
                            "bookworm-security trixie-security once")
    assert LAST_FETCHED.fullmatch(last)["listed"] == LISTED
    assert [c.split()[-1] for c in env.calls("apt-get")] == ["update"]
    # setup.sh made src: it carries the marker
    assert (env.src / MARKER).is_file()
    env.log.write_text("")
    p = env.setup("tree", "5.10", str(env.src))
    assert p.returncode == 1
    assert LAST_FETCHED.fullmatch(error_line(p))
    assert env.calls("apt-get") == []


def unpacked(src: Path, name: str, version: str = "1.0") -> Path:
    """A tree as an earlier setup.sh left it, its package recorded."""
    tree = src / name
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text("VERSION = 7\n")
    pkg = re.match(r"linux-source-\d+\.\d+", name)
    assert pkg
    (src / f"{name}.package").write_text(
        f"{pkg.group(0)} {version}\ndate Mon, 01 Dec 2025 00:00:00 +0000\n")
    return tree


def test_kver_x_resolved_in_the_recipe(env: Env) -> None:
    env.private_lists()
    # unpacked by an earlier setup.sh as linux-source-N.M, and the newest
    unpacked(env.src, "linux-source-7.3", "7.3.5-1")
    p = env.make("-s", "ksrc", "KVER=7.x")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        f"KSRC={env.src}/linux-source-7.3 "
        f"(work directory {env.workdir}/linux-source-7.3)"]
    # the lists refreshed once to find the newest, nothing downloaded
    assert [c.split()[-1] for c in env.calls("apt-get")] == ["update"]


@pytest.mark.parametrize("kver", ["7.3", "7.x"])
def test_line_moves_to_the_newest_version_served(env: Env, kver: str) -> None:
    """KVER=N.M is the newest N.M Debian serves, not the tree unpacked
    first: an older one is left alone and the newest fetched under its
    own name."""
    env.private_lists()
    old = unpacked(env.src, "linux-source-7.3", "7.3.4-1~bpo13+1")
    p = env.make("-s", "ksrc", f"KVER={kver}")
    # the fake apt-get downloads nothing: the download of the newest fails
    assert p.returncode != 0
    assert any(c.endswith("download linux-source-7.3=7.3.5-1")
               for c in env.calls("apt-get")), env.calls("apt-get")
    assert "KVER=" + kver + " is linux-source-7.3 7.3.5-1" in p.stderr
    assert (old / "Makefile").is_file()


def test_exact_version_names_its_own_tree(env: Env) -> None:
    unpacked(env.src, "linux-source-7.2.12-1~bpo13+1")
    p = env.make("-s", "ksrc", "KVER=7.2.12-1~bpo13+1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().startswith(
        f"KSRC={env.src}/linux-source-7.2.12-1~bpo13+1 ")
    assert env.calls("apt-get") == []


# KSRC: one tree however it is written

def test_trailing_slash_ksrc_same_tree_workdir(env: Env) -> None:
    tree = env.tmp / "linux"
    plain = env.make("-s", "print-TREE_WORKDIR", f"KSRC={tree}")
    slash = env.make("-s", "print-TREE_WORKDIR", f"KSRC={tree}/")
    assert plain.returncode == slash.returncode == 0, slash.stderr
    assert plain.stdout == slash.stdout == \
        f"TREE_WORKDIR={env.workdir}/linux\n"


def test_empty_ksrc_refused(env: Env) -> None:
    p = env.make("-s", "print-TREE_WORKDIR", "KSRC=")
    assert p.returncode != 0
    assert "KSRC is empty" in p.stderr


def test_ksrc_without_a_tree_refused_before_deps(env: Env) -> None:
    p = env.make("series", f"KSRC={env.tmp}/nothing/")
    assert p.returncode != 0
    assert (f"setup.sh: error: KSRC={env.tmp}/nothing: no kernel tree there"
            in p.stderr)
    assert env.calls() == []


def test_ksrc_recipe_normalises_the_tree(env: Env) -> None:
    tree = env.tmp / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("VERSION = 6\n")
    p = env.make("-s", "ksrc", f"KSRC={tree}/")
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"KSRC={tree} (work directory {env.workdir}/linux)\n"
    assert env.calls("apt-get") == []


# One run at a time in WORKDIR/src

def test_second_run_waits_for_the_lock(env: Env) -> None:
    unpacked(env.src, "linux-source-6.12")
    lock = env.src / ".lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(["bash", str(SETUP), "source", "6.12",
                                 str(env.src)], env=env.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ready, _, _ = select.select([proc.stderr], [], [], 60)
            assert ready, "setup.sh said nothing while the lock was held"
            assert proc.stderr.readline() == (
                f"setup.sh: waiting for another run that holds {lock}\n")
            assert proc.poll() is None     # still waiting
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert err == ""
    assert env.calls("apt-get") == []


def test_marks_only_the_directory_it_makes(env: Env) -> None:
    made_here = env.tmp / "new-src"
    p = env.setup("source", "6.12", str(made_here))
    assert p.returncode == 1     # the fake apt-get installs nothing
    assert (made_here / MARKER).is_file()
    # a directory that was there before is not marked (nor waited for)
    unpacked(env.src, "linux-source-6.12")
    p = env.setup("source", "6.12", str(env.src))
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert not (env.src / MARKER).exists()


# make distclean: only what the tools made

def digest(top: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(top.rglob("*")):
        h.update(str(p.relative_to(top)).encode() + b"\0")
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def made(path: Path, marked: bool = True) -> Path:
    (path / "sub" / "deeper").mkdir(parents=True)
    (path / "sub" / "deeper" / "file").write_text("x" * 4096)
    if marked:
        (path / MARKER).write_text("")
    return path


def test_distclean_removes_only_marked(env: Env) -> None:
    made(env.workdir / "linux-source-6.12")
    made(env.workdir / "src")
    (env.workdir / "src" / ".lock").write_text("")
    mine = made(env.workdir / "mine", marked=False)
    (env.workdir / "notes.txt").write_text("keep\n")
    sibling = made(env.tmp / "sibling", marked=False)
    (env.workdir / "link").symlink_to(sibling)
    made(env.out / "series")
    before_sibling, before_mine = digest(sibling), digest(mine)
    p = env.make("distclean")
    assert p.returncode != 0
    assert "removing what the tools made (du -sh):" in p.stdout
    assert re.search(r"^\S+\ttotal$", p.stdout, re.M)
    refusals = [line for line in p.stderr.splitlines()
                if line.startswith("setup.sh:")]
    assert refusals == [
        f"setup.sh: error: kept {mine}: no {MARKER} there (not made by these "
        "tools, or made before they marked their directories); remove it "
        "yourself if it is theirs"]
    assert sorted(x.name for x in env.workdir.iterdir()) == \
        ["link", "mine", "notes.txt"]
    assert not env.out.exists()
    assert digest(sibling) == before_sibling
    assert digest(mine) == before_mine
    assert env.calls() == []


def test_distclean_all_marked_succeeds(env: Env) -> None:
    made(env.workdir / "src")
    p = env.make("distclean")
    assert p.returncode == 0, p.stderr
    assert list(env.workdir.iterdir()) == []
    p = env.make("distclean")
    assert p.returncode == 0, p.stderr
    assert "nothing to remove" in p.stdout


@pytest.mark.parametrize("workdir,why", [
    ("/", "is /"), ("//", "is /"), ("HOME", "is $HOME"),
    ("", "WORKDIR is empty")])
def test_distclean_refuses_root_home_empty(env: Env, workdir: str,
                                           why: str) -> None:
    made(env.home / "marked")
    made(env.out / "series")
    before = digest(env.tmp)
    workdir = str(env.home) + "/" if workdir == "HOME" else workdir
    p = env.setup("distclean", workdir, str(env.out))
    assert p.returncode == 1
    assert why in error_line(p)
    assert digest(env.tmp) == before


def test_distclean_refuses_out_holding_workdir(env: Env) -> None:
    made(env.workdir / "src")
    before = digest(env.tmp)
    p = env.setup("distclean", str(env.workdir), str(env.tmp))
    assert p.returncode == 1
    assert error_line(p) == (f"setup.sh: error: OUT={env.tmp} holds "
                             f"{env.workdir}: distclean removes nothing")
    assert digest(env.tmp) == before


def test_distclean_waits_for_a_run(env: Env) -> None:
    made(env.workdir / "src")
    lock = env.workdir / "src" / ".lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(["bash", str(SETUP), "distclean",
                                 str(env.workdir), str(env.out)],
                                env=env.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ready, _, _ = select.select([proc.stderr], [], [], 60)
            assert ready
            assert proc.stderr.readline() == (
                f"setup.sh: waiting for another run that holds {lock}\n")
            assert (env.workdir / "src").is_dir()
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert not (env.workdir / "src").exists()


def test_allow_dirty_passed_to_the_generator(env: Env) -> None:
    tree = env.tmp / "linux"
    dirty = env.make("-n", "series", f"KSRC={tree}", "ALLOW_DIRTY=1")
    clean = env.make("-n", "series", f"KSRC={tree}")
    assert dirty.returncode == clean.returncode == 0, dirty.stderr
    assert dirty.stdout.splitlines()[-1].endswith(" --allow-dirty")
    assert "--allow-dirty" not in clean.stdout
