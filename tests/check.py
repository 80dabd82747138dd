#!/usr/bin/env python3
"""Run every test of the project and print one verdict per case, ending with
'N passed, N failed'.  Sub-suites (pytest, the matcher test, the boot test)
add their own counts.

  tests/check.py --fast                 tests that need no kernel tree
  tests/check.py --ksrc K --workdir W   everything (what 'make check' runs)
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
PY = sys.executable

from nsgen import guard, identity, kbuild, results, tree  # noqa: E402
from nsgen.run import Timeout, ToolError, run  # noqa: E402


class Status(Enum):
    PASS = "ok"
    FAIL = "not ok"


@dataclass
class Case:
    name: str
    status: Status
    passed: int          # counted cases (1 for a plain check)
    failed: int
    elapsed: float
    detail: str = ""


def sh(cmd: Sequence[str | Path], timeout: float, cwd: Path = PROJECT,
       env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command, echoing its output live to stderr, and capture it.

    The echo is indented, so that the log's only lines at the margin are the
    TAP of this script (a command's own "ok"/"not ok" lines are nested)."""
    print(f"    # $ {shlex.join(str(c) for c in cmd)}", file=sys.stderr,
          flush=True)
    try:
        return run(cmd, cwd=cwd, env=env, timeout=timeout, echo="    ",
                   check=False)
    except Timeout as e:
        return subprocess.CompletedProcess(list(cmd), 124, f"TIMEOUT: {e}\n")


def counts(output: str) -> tuple[int, int] | None:
    """The last 'N passed, N failed' (or pytest's summary) in output."""
    found = None
    for line in output.splitlines():
        m = re.search(r"(\d+) passed, (\d+) failed", line)
        if m:
            found = (int(m.group(1)), int(m.group(2)))
            continue
        m = re.match(r"=*\s*(?:(\d+) failed, )?(\d+) passed", line.strip("= "))
        if m and ("passed in" in line or "failed" in line):
            found = (int(m.group(2)), int(m.group(1) or 0))
    return found


def suite(name: str, cmd: Sequence[str], timeout: float, **kw: object) -> Case:
    start = time.monotonic()
    proc = sh(cmd, timeout, **kw)  # type: ignore[arg-type]
    c = counts(proc.stdout)
    elapsed = time.monotonic() - start
    if c is None:
        return Case(name, Status.FAIL, 0, 1, elapsed,
                    f"no result line (exit {proc.returncode})")
    ok = proc.returncode == 0 and c[1] == 0 and c[0] > 0
    return Case(name, Status.PASS if ok else Status.FAIL, c[0],
                c[1] + (0 if ok or c[1] else 1), elapsed,
                f"{c[0]} passed, {c[1]} failed, exit {proc.returncode}")


def single(name: str, fn: Callable[[], str | None]) -> Case:
    """A check that returns None on success or the reason it failed."""
    start = time.monotonic()
    try:
        why = fn()
    except Exception as e:  # a crash in a check is that check's failure
        why = f"{type(e).__name__}: {e}"
    elapsed = time.monotonic() - start
    if why:
        return Case(name, Status.FAIL, 0, 1, elapsed, why)
    return Case(name, Status.PASS, 1, 0, elapsed)


# The sender of the series make check writes, where git has none (a fresh
# machine, CI): the series must be signed for the checks by mail and
# checkpatch to mean anything.  make itself writes an unsigned placeholder.
CHECK_SENDER = "make check <make-check@example.invalid>"


def sender_args() -> list[str]:
    if identity.resolve(None, PROJECT).signed:
        return []
    print(f"    # git has no user.name/user.email: the series is written as "
          f"{CHECK_SENDER}", file=sys.stderr, flush=True)
    return ["--author", CHECK_SENDER]


class Full:
    """The checks that need the real kernel tree."""

    def __init__(self, args: argparse.Namespace, ksrc: str | None = None,
                 workdir: str | None = None, out: str | None = None) -> None:
        self.args = args
        self.ksrc = Path(ksrc or args.ksrc).resolve()
        self.workdir = Path(workdir or args.workdir).resolve()
        self.out = Path(out or args.out).resolve()
        self.applied = self.workdir / "applied"
        self.marker = self.workdir / ".check-started"
        self.log = ""       # generate's output

    def record(self, kind: str, case: Case, **data: object) -> None:
        """Keep a result for the cover letter, under the key of the series
        in OUT/series (nsgen/results.py); a series that is not there any
        more gets nothing."""
        series = self.out / "series"
        try:
            key = results.key_of_mails(series)
            version = tree.check_tree(self.ksrc, True).version
        except (ToolError, OSError):
            return
        results.record(self.workdir, kind, key, {
            "passed": case.passed, "failed": case.failed,
            "elapsed": round(case.elapsed), "kernel": version, **data})

    def gen(self, *extra: str) -> subprocess.CompletedProcess[str]:
        if extra[:1] == ("generate",):
            # make check's runs are scratch runs: no version recorded
            extra = (*extra, *sender_args(), "--history", "")
        return sh([PY, "generate.py", *extra, "--ksrc", str(self.ksrc),
                   "--workdir", str(self.workdir)], 3600)

    def generate(self) -> str | None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.marker.write_text("")
        cache = getattr(self.args, "cache", "")
        p = self.gen("generate", "--out", str(self.out), "--jobs",
                     str(self.args.jobs), "--base-desc", self.args.base_desc,
                     *(["--cache", cache] if cache else []))
        self.log = p.stdout
        return None if p.returncode == 0 else p.stdout.strip().splitlines()[-1]

    def reproducible(self) -> str | None:
        """A second run, its generated steps computed again (the first may
        have replayed an earlier run's), writes the same bytes."""
        other = self.workdir / "repro"
        p = self.gen("generate", "--out", str(other), "--recompute", "--jobs",
                     str(self.args.jobs), "--base-desc", self.args.base_desc)
        if p.returncode != 0:
            return "second run failed"
        a, b = self.out / "series", other / "series"
        names = sorted(x.name for x in a.iterdir())
        if names != sorted(x.name for x in b.iterdir()):
            return "different patch files"
        diff = [n for n in names if not filecmp.cmp(a / n, b / n, shallow=False)]
        return f"differs: {', '.join(diff)}" if diff else None

    def untouched(self) -> str | None:
        p = run(["find", self.ksrc, "-newer", self.marker, "-print", "-quit"])
        return f"modified: {p.stdout.strip()}" if p.stdout.strip() else None

    def applies(self) -> str | None:
        p = self.gen("apply", "--series", str(self.out / "series"), "--dest",
                     str(self.applied))
        return None if p.returncode == 0 else p.stdout.strip().splitlines()[-1]

    def same_tree(self) -> str | None:
        def tree(d: Path) -> str:
            return run(["git", "-C", d, "rev-parse",
                        "HEAD^{tree}"]).stdout.strip()
        a, b = tree(self.applied), tree(self.workdir / "work")
        return None if a == b else f"git am gives {a[:12]}, generator {b[:12]}"

    def converted(self) -> str | None:
        p = self.gen("check", "--tree", str(self.applied), "--jobs",
                     str(self.args.jobs))
        return None if p.returncode == 0 else p.stdout.strip().splitlines()[-1]

    def verify(self) -> str | None:
        """Equivalence proof of the ns-string commit (generate.py verify),
        then the series again so that its cover letter quotes the figures."""
        p = sh([PY, "generate.py", "verify", "--ksrc", str(self.ksrc),
                "--workdir", str(self.workdir), "--out", str(self.out),
                "--jobs", str(self.args.jobs), "--cc-wrapper",
                self.args.cc_wrapper], 3 * 3600)
        if p.returncode != 0:
            return p.stdout.strip().splitlines()[-1]
        return self.generate()

    def abi(self) -> str | None:
        """generate.py abi-check: the series keeps the module ABI (the
        record the cover letter quotes; verify writes the series again)."""
        p = sh([PY, "generate.py", "abi-check", "--ksrc", str(self.ksrc),
                "--workdir", str(self.workdir), "--out", str(self.out),
                "--jobs", str(self.args.jobs), "--cc-wrapper",
                self.args.cc_wrapper], 3600)
        if p.returncode != 0:
            return "\n".join(p.stdout.strip().splitlines()[-12:])
        return None

    def kunit_parse(self, boot: Case) -> str | None:
        """The kernel's own kunit.py reads results.ktap with 0 errors and
        counts what the boot test counted."""
        results = self.out / "boot-test" / "results.ktap"
        tool = self.applied / "tools/testing/kunit/kunit.py"
        if not results.is_file():
            return f"{results}: missing"
        p = run([PY, tool, "parse", results], check=False)
        m = re.search(r"Ran (\d+) tests: (.*)", p.stdout)
        if p.returncode not in (0, 1) or m is None:
            return f"kunit.py parse: exit {p.returncode}, no summary"
        got = dict((k.strip(), int(v)) for k, v in
                   (part.split(":") for part in m.group(2).split(",")))
        if got.get("errors") or "[ERROR]" in p.stdout:
            return f"kunit.py parse: {m.group(0).strip()}"
        failed = got.get("failed", 0) + got.get("crashed", 0)
        if (got.get("passed", 0), failed) != (boot.passed, boot.failed):
            return (f"kunit.py parse: {m.group(0).strip()}; the boot test "
                    f"said {boot.passed} passed, {boot.failed} failed")
        return None

    def objects(self) -> str | None:
        """The patched loader (module signing included), its KUnit suite
        and modpost compile: a defconfig with KUnit and CONFIG_MODULE_SIG,
        built only up to kernel/module/ and scripts/mod/ (objects, not a
        whole kernel)."""
        build = self.workdir / "build-objects"
        wrapper, _ = kbuild.resolve_wrapper(self.args.cc_wrapper)
        make = ["make", "-s", "-C", str(self.applied), f"O={build}",
                f"-j{self.args.jobs}", f"CC={kbuild.cc(wrapper)}"]
        env = {**os.environ,
               **kbuild.wrapper_env(wrapper, self.applied, build)}
        config = str(self.applied / "scripts/config")
        steps = [make + ["defconfig"],
                 [config, "--file", str(build / ".config"), "-e", "KUNIT",
                  "-e", "MODULE_EXPORT_FOR_KUNIT_TEST", "-e", "MODULE_SIG"],
                 make + ["olddefconfig"],
                 make + ["kernel/module/", "scripts/mod/"]]
        for cmd in steps:
            p = sh(cmd, 3600, env=env)
            if p.returncode != 0:
                return (f"{shlex.join(cmd[-2:])}: exit {p.returncode}: "
                        f"{p.stdout.strip().splitlines()[-1:]}")
        want = [build / "kernel/module/main.o",
                build / "kernel/module/signing.o",
                build / "kernel/module/export_for_kunit.o",
                build / "scripts/mod/modpost"]
        missing = [str(w) for w in want if not w.is_file()]
        return f"not built: {', '.join(missing)}" if missing else None

    def checkpatch(self) -> list[Case]:
        allow: set[tuple[str, str]] = set()
        for line in (PROJECT / "patches/checkpatch.allow").read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                patch, kind = line.split()[:2]
                allow.add((patch, kind))
        cases = []
        script = self.ksrc / "scripts/checkpatch.pl"
        top = PROJECT / "patches"
        for patch in sorted(top.glob("*.patch")) + sorted(top.glob("*/*.patch")):
            def one(patch: Path = patch) -> str | None:
                p = run(["perl", script, "--strict", "--show-types",
                         "--no-summary", "--terse", "-"],
                        stdin=patch.read_text(), cwd=self.ksrc, timeout=600,
                        env={"PATH": "/usr/bin:/bin"}, check=False)
                found = re.findall(r"(ERROR|WARNING|CHECK):(\w+):", p.stdout)
                bad = [f"{lvl}:{t}" for lvl, t in found
                       if (patch.name, t) not in allow
                       and ("*", t) not in allow]
                return ", ".join(bad) or None
            cases.append(single("checkpatch --strict "
                                f"{patch.relative_to(top)}", one))
        return cases


# Where make check's time goes: the parts, by the case names' start.
PARTS = (("kernel build and boot", ("boot test",)),
         ("equivalence proof (verify)", ("verify",)),
         ("module ABI (abi-check)", ("abi-check",)),
         ("series generation", ("generate", "series is byte-identical")),
         ("completeness and idempotence", ("conversion complete",)),
         ("other kernels", ("linux-source-",)))


def fetch_source(src: Path, kver: str) -> tuple[str, str | None]:
    """linux-source-KVER unpacked in src by setup.sh ('N.x': the newest
    N.* Debian serves): (the version, None), or (KVER, the last line of
    the failure)."""
    setup = [str(PROJECT / "setup.sh")]
    p = sh(setup + ["resolve", kver, str(src)], 600)
    if p.returncode == 0 and p.stdout.strip():
        kver = p.stdout.strip().splitlines()[-1]
        p = sh(setup + ["source", kver, str(src)], 1800)
    elif p.returncode == 0:
        return kver, "setup.sh resolve printed no version"
    if p.returncode != 0:
        return kver, (p.stdout.strip().splitlines() or ["?"])[-1]
    return kver, None


def tree_env(args: argparse.Namespace) -> dict[str, str] | None:
    """The environment of pytest in a full run: KSRC_<line> of each tree
    (KSRC and the other kernels, fetched now if need be), which the drift
    fixtures are derived from, and NS_REQUIRE_TREES: a missing one fails
    there instead of skipping."""
    if args.fast or not args.ksrc:
        return None
    env = {**os.environ, "NS_REQUIRE_TREES": "1"}
    trees = [Path(args.ksrc)]
    src = Path(args.src_dir or Path(args.workdir).parent / "src")
    for kver in filter(None, args.other_kernels.split(",")):
        kver, error = fetch_source(src, kver)
        if error is None:
            trees.append(src / f"linux-source-{kver}")
    for t in trees:
        try:
            version = tree.check_tree(t, True).version
        except ToolError:
            continue
        line = ".".join(version.split(".")[:2])
        env.setdefault(f"KSRC_{line.replace('.', '_')}", str(t))
    return env


def other_kernel(args: argparse.Namespace, kver: str) -> list[Case]:
    """Regenerate the series on linux-source-KVER ('N.x': the newest N.*
    Debian serves): written, applies, complete, idempotent, reproducible;
    the patched loader and modpost compile."""
    src = Path(args.src_dir)
    start = time.monotonic()
    kver, error = fetch_source(src, kver)
    name = f"linux-source-{kver}"
    if error is not None:
        return [Case(f"{name}: fetch and unpack", Status.FAIL, 0, 1,
                     time.monotonic() - start, error)]
    full = Full(args, str(src / name), str(Path(args.workdir).parent / name),
                str(Path(args.out) / "kernels" / name))
    cases = [single(f"{name}: generate the series", full.generate)]
    if cases[0].status is Status.FAIL:
        return cases
    cases.append(single(f"{name}: series is byte-identical on a second run",
                        full.reproducible))
    applied = single(f"{name}: series applies with git am", full.applies)
    cases.append(applied)
    if applied.status is Status.FAIL:
        return cases
    cases.append(single(f"{name}: git am result equals the generator's tree",
                        full.same_tree))
    cases.append(single(f"{name}: conversion complete and idempotent",
                        full.converted))
    cases.append(suite(f"{name}: matcher unit test (header from the "
                       "applied tree)",
                       ["make", "-s", "-C", "tests/matcher",
                        f"KSRC_PATCHED={full.applied}",
                        f"BUILD=build/{name}"], 600))
    cases.append(single(f"{name}: patched kernel/module/ and modpost "
                        "compile", full.objects))
    return cases


def converter_kernels(args: argparse.Namespace, full: "Full") -> Case:
    """generate.py module's output on the boot test's kernel, Debian's
    linux-headers for 6.1 and the newest 7.x tree (modules_prepare)."""
    name = ("generate.py module output builds on the patched kernel, "
            "Debian 6.1 headers and upstream 7.x")
    src = Path(args.src_dir or Path(args.workdir).parent / "src")
    kver, error = fetch_source(src, "7.x")
    if error is not None:
        return Case(name, Status.FAIL, 0, 1, 0.0, f"no 7.x tree: {error}")
    return suite(name, [
        PY, "tests/converter_kernels.py",
        "--patched", full.workdir / "build-boot-test",
        "--upstream", src / f"linux-source-{kver}",
        "--work", full.workdir / "converter-kernels",
        "--jobs", str(args.jobs)], 3600)


def time_breakdown(cases: list[Case]) -> list[str]:
    """TAP comments: the time of each part and of the whole."""
    total = sum(c.elapsed for c in cases)
    lines = []
    rest = total
    for part, starts in PARTS:
        t = sum(c.elapsed for c in cases if c.name.startswith(starts))
        if t:
            lines.append(f"# time: {part}: {t:.0f} s")
            rest -= t
    lines.append(f"# time: everything else: {rest:.0f} s")
    lines.append(f"# time: total: {total:.0f} s ({total / 60:.1f} min)")
    return lines


def shellcheck() -> str | None:
    """The project's shell scripts; the guest's /init is busybox sh."""
    bad = []
    for args in (["setup.sh", ".ci/run", "tests/matcher/extract-header.sh"],
                 ["-s", "sh", "boot-test/init"]):
        p = run(["shellcheck", *args], cwd=PROJECT, check=False)
        if p.returncode != 0:
            bad.append(p.stdout.strip().splitlines()[0] if p.stdout.strip()
                       else f"shellcheck {' '.join(args)}: exit {p.returncode}")
    return "; ".join(bad) or None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true",
                    help="only the tests that need no kernel tree")
    ap.add_argument("--ksrc")
    ap.add_argument("--workdir")
    ap.add_argument("--out", default=str(PROJECT / "out"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--base-desc", default="")
    ap.add_argument("--cc-wrapper", default=kbuild.AUTO,
                    help="compiler wrapper of the kernel builds (default: "
                    "ccache if installed)")
    ap.add_argument("--other-kernels", default="",
                    help="comma-separated KVERs (6.1, 7.x) to regenerate "
                    "the series on as well")
    ap.add_argument("--src-dir", default="",
                    help="where setup.sh unpacks the other kernels")
    ap.add_argument("--only", choices=["boot-test", "checkpatch",
                                       "other-kernels"],
                    help="run one part of the full checks")
    args = ap.parse_args(argv)
    if not args.fast and not (args.ksrc and args.workdir):
        ap.error("--ksrc and --workdir are needed unless --fast")
    if args.fast:
        return run_cases(args)
    # The tree's work directory and OUT are make check's for the whole run
    # (a 'make' meanwhile waits); the generate.py runs it starts inherit it.
    try:
        with guard.locked(Path(args.workdir), "WORKDIR"), \
                guard.locked(Path(args.out), "OUT"):
            return run_cases(args)
    except ToolError as e:
        print(f"check.py: error: {e}", file=sys.stderr)
        print("0 passed, 1 failed", flush=True)
        return 1


def run_cases(args: argparse.Namespace) -> int:
    cases: list[Case] = []

    def add(case: Case | list[Case]) -> None:
        for c in case if isinstance(case, list) else [case]:
            cases.append(c)
            line = f"{c.status.value} {len(cases)} - {c.name} ({c.elapsed:.1f} s)"
            print(line + (f": {c.detail}" if c.detail else ""), flush=True)

    print("TAP version 13", flush=True)
    full: Full | None = None
    if args.only is None:
        add(suite("pytest tests/ (tooling, semantic-patch fixtures, drift "
                  "fixtures from the real trees)",
                  [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "tests"], 1800, env=tree_env(args)))
        add(suite("pytest boot-test/ (runner, results on canned logs)",
                  [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "boot-test"], 600))
        add(suite("matcher unit test (header from patch 0004)",
                  ["make", "-s", "-C", "tests/matcher"], 600))
        add(single("shellcheck on the shell scripts", shellcheck))
    if not args.fast:
        full = Full(args)
        applied: Case | None = None
        if args.only == "checkpatch":
            add(full.checkpatch())
        elif args.only == "other-kernels":
            for kver in filter(None, args.other_kernels.split(",")):
                add(other_kernel(args, kver))
        elif args.only == "boot-test":
            applied = single("series applies with git am", full.applies)
            add(applied)
        else:
            add(single("generate the series from the real tree", full.generate))
            add(single("input tree untouched", full.untouched))
            add(single("series is byte-identical on a second run",
                       full.reproducible))
            applied = single("series applies with git am", full.applies)
            add(applied)
            add(single("git am result equals the generator's tree",
                       full.same_tree))
            add(single("conversion complete and idempotent", full.converted))
            add(single("abi-check: the series keeps the module ABI",
                       full.abi))
            add(suite("abi-check finds deliberate ABI breaks", [
                PY, "tests/abi_check.py", "--ksrc", str(full.ksrc),
                "--workdir", str(full.workdir), "--series",
                str(full.out / "series"), "--out", str(full.out / "abi-check"),
                "--jobs", str(args.jobs), "--cc-wrapper", args.cc_wrapper],
                3600))
            add(suite("the treewide commit's recipe, run from its message "
                      "alone, gives its tree", [
                          PY, "tests/recipe_check.py", "--ksrc",
                          str(full.ksrc), "--workdir", str(full.workdir),
                          "--series", str(full.out / "series")], 1800))
            add(single("verify: preprocessed output unchanged by the "
                       "conversion", full.verify))
            add(suite("matcher unit test (header from the applied tree)",
                      ["make", "-s", "-C", "tests/matcher",
                       f"KSRC_PATCHED={full.applied}"], 600))
            add(full.checkpatch())
            add(suite("the series by mail: git send-email, b4 am, "
                      "checkpatch on every patch", [
                          PY, "tests/mail_check.py", "--series",
                          str(full.out / "series"), "--ksrc", str(full.ksrc),
                          "--work", str(full.workdir / "mail-check")], 5400))
            for kver in filter(None, args.other_kernels.split(",")):
                add(other_kernel(args, kver))
        if applied is not None:
            if applied.status is Status.PASS:
                boot = suite("boot test in QEMU", [
                    PY, "boot-test/run.py", "--ksrc", full.applied,
                    "--build-dir", full.workdir / "build-boot-test",
                    "--out", full.out / "boot-test", "--jobs",
                    str(args.jobs), "--cc-wrapper", args.cc_wrapper], 4500)
                add(boot)
                full.record("boot-test", boot, config="x86_64 defconfig, "
                            "KVM as modules, booted in QEMU")
                add(single("kunit.py parse reads results.ktap: 0 errors, "
                           "the same counts", lambda: full.kunit_parse(boot)))
                add(suite("kernel build through distcc on 127.0.0.1", [
                    PY, "tests/distcc_check.py", "--ksrc", full.applied,
                    "--build-dir", full.workdir / "build-boot-test",
                    "--jobs", str(args.jobs)], 900))
                add(suite(
                    "generate.py module outputs build with kbuild against "
                    "the patched tree",
                    [PY, "tests/module_kbuild_check.py", "--ksrc",
                     full.applied, "--build-dir",
                     full.workdir / "build-boot-test"], 900))
                add(converter_kernels(args, full))
            else:
                add(Case("boot test in QEMU", Status.FAIL, 0, 1, 0.0,
                         "not run: the series does not apply"))
    for line in time_breakdown(cases):
        print(line, flush=True)
    passed = sum(c.passed for c in cases)
    failed = sum(c.failed for c in cases)
    if full is not None and args.only is None and not args.fast:
        full.record("check", Case("make check", Status.PASS if not failed
                                  else Status.FAIL, passed, failed,
                                  sum(c.elapsed for c in cases)))
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
