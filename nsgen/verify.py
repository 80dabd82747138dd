"""Equivalence proof of the ns-string commit: every C file it touches
preprocesses to the same tokens before and after it.

One git work tree of the baseline repository (WORKDIR/verify/src) and one
out-of-tree build directory per architecture serve both sides: x86_64 with
allmodconfig for most files, and for the files of another architecture's
arch/ directory that architecture with Debian's cross compiler and a small
configuration (nsgen/cross.py).  The tree is checked out at the commit's
parent, each build directory 'make prepare'd, its files preprocessed in
one make invocation (make -k O=BUILD a.i b.i ...) and the outputs set
aside; then checked out at the commit (which rewrites only the files the
commit changes), prepared again (kbuild redoes only what those files feed)
and preprocessed again.  The outputs are compared with the line
markers (# N "file") dropped and all whitespace collapsed.  A passing result
is recorded with a hash of its inputs and reused while they stay the same.

A difference fails unless cocci/equivalence.allow lists the file with a
reason and the commit message mentions it.  The figures go to OUT/verify/
and, keyed by the commit's tree hash, to WORKDIR/verify/results/, where the
cover letter finds them (and never finds results of another series).
"""

from __future__ import annotations

import difflib
import email
import hashlib
import json
import os
import re
import shutil
import textwrap
import time
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Callable

from . import convert, cross, kbuild
from .run import ToolError, run
from .series import apply_patch, patch_files
from .tree import KernelTree, Repo, attach_worktree, snapshot

LINE_MARKER = re.compile(rb'^#\s*\d+(?:\s+".*)?$', re.M)
CONFIG = cross.NATIVE.config
ARCH = cross.NATIVE.arch
MAKE_TIMEOUT = 4 * 3600


class Verdict(Enum):
    IDENTICAL = "identical"
    DIFFERENT = "different"
    ALLOWED = "different, allowed"
    FAILED = "could not be preprocessed"


@dataclass(frozen=True)
class FileResult:
    path: str
    verdict: Verdict
    detail: str = ""


@dataclass
class Outcome:
    commit: str
    parent: str
    tree: str
    compiler: str
    files: list[FileResult] = field(default_factory=list)
    total: int = 0                # files the commit touches
    seconds: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    inputs: str = ""              # inputs_key() of the run
    # the other architectures used: "arm64 defconfig" -> compiler version
    cross: dict[str, str] = field(default_factory=dict)
    # of total: C files the commit does not touch, in a directory whose
    # Makefile (flags such as -DDEFAULT_SYMBOL_NAMESPACE) it changes
    by_makefile: int = 0

    def what(self) -> str:
        """What the total counts."""
        if not self.by_makefile:
            return f"the {self.total} C files the ns-string commit touches"
        return (f"the {self.total} C files: {self.total - self.by_makefile} "
                f"the ns-string commit touches, {self.by_makefile} in "
                "directories whose Makefile it changes")

    def of(self, verdict: Verdict) -> list[FileResult]:
        return [f for f in self.files if f.verdict is verdict]

    @property
    def complete(self) -> bool:
        return len(self.files) == self.total

    @property
    def passed(self) -> bool:
        return not self.of(Verdict.DIFFERENT) and not self.problems

    def counts(self) -> str:
        return (f"{len(self.of(Verdict.IDENTICAL))} identical, "
                f"{len(self.of(Verdict.DIFFERENT))} different, "
                f"{len(self.of(Verdict.ALLOWED))} different but allowed, "
                f"{len(self.of(Verdict.FAILED))} could not be preprocessed")

    def to_json(self) -> str:
        d = asdict(self)
        d["files"] = [[f.path, f.verdict.value, f.detail] for f in self.files]
        return json.dumps(d, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Outcome":
        d = json.loads(text)
        files = [FileResult(p, Verdict(v), det) for p, v, det in d.pop("files")]
        return cls(files=files, **d)


def find_conversion(repo: Repo) -> tuple[str, str, str]:
    """(last commit, parent of the first, tree of the last) of the
    treewide conversion at or below HEAD: one commit, or its parts."""
    log = repo.git("log", "--format=%H %P %T %s", "HEAD")
    found = [line.split(" ", 3) for line in log.splitlines()
             if len(line.split(" ", 3)) == 4
             and convert.is_ns_string(line.split(" ", 3)[3])]
    if not found:
        raise ToolError(f"no commit '{convert.NS_STRING_SUBJECT}' in "
                        f"{repo.work_tree}; run 'make' (generate.py "
                        "generate) first")
    return found[0][0], found[-1][1], found[0][2]


def conversion_subject(series_dir: Path) -> str:
    """The subject of the series' last patch of the treewide conversion
    (apply_series() stops there)."""
    subjects = [s for s in map(patch_subject, patch_files(series_dir))
                if convert.is_ns_string(s)]
    if not subjects:
        raise ToolError(f"{series_dir}: no patch '{convert.NS_STRING_SUBJECT}'"
                        "; run 'make' first")
    return subjects[-1]


def patch_subject(patch: Path) -> str:
    msg = email.message_from_string(patch.read_text(errors="replace"))
    subject = " ".join(str(msg.get("Subject", "")).split())
    return re.sub(r"^\[PATCH[^]]*\]\s*", "", subject)


def apply_series(ksrc: KernelTree, workdir: Path, series_dir: Path,
                 subject: str) -> Repo:
    """The series of series_dir applied with git am up to the patch with
    subject, in WORKDIR/am, the work tree where generate.py apply runs git
    am too (fixed dates: the same series gives the same commits, so the
    before/after trees keep their build outputs)."""
    patches = patch_files(series_dir)
    _, base, _ = snapshot(ksrc, workdir)
    repo = attach_worktree(workdir / "baseline.git",
                           base, workdir / "am")
    for p in patches:
        apply_patch(repo, p)
        if patch_subject(p) == subject:
            return repo
    raise ToolError(f"{series_dir}: no patch '{subject}'; run 'make' first")


@dataclass(frozen=True)
class Make:
    """How verify runs kbuild: job count, compiler wrapper, architecture."""
    jobs: int = 1
    wrapper: str = ""
    target: cross.Target = cross.NATIVE

    def __call__(self, src: Path, build: Path, *targets: str,
                 keep_going: bool = False) -> str:
        t = self.target
        cmd = ["make", "-C", str(src), f"O={build}", f"ARCH={t.arch}",
               *([f"CROSS_COMPILE={t.cross}"] if t.cross else []),
               f"CC={kbuild.cc(self.wrapper, t.compiler)}", f"-j{self.jobs}",
               # the tree before the conversion as the kernel's code is
               # compiled after it: without the transition of patch 0003
               "KBUILD_NS_AS_WRITTEN=",
               *(["-k"] if keep_going else []), *targets]
        proc = run(cmd, timeout=MAKE_TIMEOUT, check=not keep_going,
                   env={"LC_ALL": "C",
                        **kbuild.wrapper_env(self.wrapper, src, build)})
        return proc.stdout + proc.stderr


def external_dir(src: Path, f: str) -> str | None:
    """The external-module directory (M=) that builds f, for code under
    tools/ that kbuild only reaches that way (tools/testing/cxl)."""
    if not f.startswith("tools/"):
        return None
    for d in Path(f).parents:
        if d == Path("tools"):
            break
        if (src / d / "Kbuild").is_file():
            return str(d)
    return None


def output(src: Path, build: Path, f: str) -> Path:
    """Where make writes the preprocessed f (an external module's in its
    source directory: kbuild of this version has no separate output)."""
    rel = f[:-2] + ".i"
    return src / rel if external_dir(src, f) else build / rel


def preprocess(make: Make, src: Path, build: Path, files: list[str]) -> str:
    """make -k every f.i, in-tree files in one make, external modules one
    make per directory; the combined log."""
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(external_dir(src, f) or "", []).append(f)
    log = ""
    for m, fs in sorted(groups.items()):
        if m:
            log += make(src, build, f"M={src / m}",
                        *(str(Path(f).relative_to(m))[:-2] + ".i"
                          for f in fs), keep_going=True)
        else:
            log += make(src, build, *(f[:-2] + ".i" for f in fs),
                        keep_going=True)
    return log


def prepare(make: Make, src: Path, build: Path, rev: str,
            options: list[str] = []) -> bool:
    """Configure build with the target's configuration (and options, set
    with the tree's scripts/config; !NAME disables) and 'make prepare' it, unless it
    already is for this source revision.  True when work was done."""
    stamp = build / ".nsgen-verify-prepared"
    config = build / ".config"
    t = make.target

    def current() -> str:
        conf = hashlib.sha256(config.read_bytes()).hexdigest()[:16] \
            if config.is_file() else "-"
        return f"{rev} {t.arch} {t.config} {' '.join(options)} {conf}\n"

    if stamp.is_file() and stamp.read_text() == current():
        return False
    build.mkdir(parents=True, exist_ok=True)
    make(src, build, t.config)
    if options:
        run([src / "scripts" / "config", "--file", config,
             *(w for o in options for w in (
                 ("--disable", o[1:]) if o.startswith("!") else
                 ("--enable", o)))])
        make(src, build, "olddefconfig")
    make(src, build, "prepare")
    stamp.write_text(current())
    return True


def normalized(data: bytes) -> bytes:
    """Preprocessed text without line markers, whitespace collapsed."""
    return b" ".join(LINE_MARKER.sub(b"", data).split())


def same_bytes(a: Path, b: Path) -> bool:
    """Byte-identical outputs (the common case: both sides come from the
    same work tree, so even the line markers agree); a quick test before
    the slower normalized comparison."""
    return a.stat().st_size == b.stat().st_size and \
        a.read_bytes() == b.read_bytes()


class Digests:
    """sha256 of each .i's normalized text, cached by size and mtime."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: dict[str, list[object]] = {}
        if path.is_file():
            self.known = json.loads(path.read_text())

    def get(self, f: Path) -> str:
        st = f.stat()
        key = str(f)
        hit = self.known.get(key)
        if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return str(hit[2])
        digest = hashlib.sha256(normalized(f.read_bytes())).hexdigest()
        self.known[key] = [st.st_size, st.st_mtime_ns, digest]
        return digest

    def save(self) -> None:
        tmp = self.path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.known, sort_keys=True))
        tmp.replace(self.path)


def first_error(log: str, src: Path, path: str) -> str:
    """The compiler's first error about path or a header it includes."""
    current = ""
    for line in log.splitlines():
        line = line.replace(f"{src}/", "")
        m = re.search(r"([\w./+-]+\.c):\d+", line)
        if m:
            current = m.group(1)
        if " error: " in line and current == path:
            where, msg = line.split(" error: ", 1)
            where = where.split(":", 1)[0]
            return msg.strip() if where == path else f"{where}: {msg.strip()}"
    return "no output from the preprocessor (see the make log)"


def show_difference(a: Path, b: Path, limit: int = 40) -> str:
    """A short diff of the two outputs, markers and blank lines dropped."""
    def lines(p: Path) -> list[str]:
        text = LINE_MARKER.sub(b"", p.read_bytes()).decode(errors="replace")
        return [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()]
    diff = list(difflib.unified_diff(lines(a), lines(b), "before", "after",
                                     n=0, lineterm=""))
    more = [f"... {len(diff) - limit} more lines"] if len(diff) > limit else []
    return "\n".join(diff[:limit] + more)


# What verify kept before one work tree served both sides: two work trees,
# two build directories (about 6 GB) and the git am tree, now WORKDIR/am.
OLD_LAYOUT = ("before", "after", "build-before", "build-after", "series")


def drop_old_layout(base: Path, log: Callable[[str], None]) -> None:
    """Remove what an older verify left in WORKDIR/verify (the work trees
    are then pruned from the baseline repository by the next checkout)."""
    for name in OLD_LAYOUT:
        if (base / name).is_dir():
            log(f"  removing {base / name}, left by an older verify")
            shutil.rmtree(base / name)


def set_aside(src: Path, build: Path, files: list[str], dest: Path) -> None:
    """Move the .i of files from the build (or an external module's source
    directory) to dest/<same path>, out of the way of the other side."""
    if dest.exists():
        shutil.rmtree(dest)
    for f in files:
        made = output(src, build, f)
        if made.is_file():
            target = dest / (f[:-2] + ".i")
            target.parent.mkdir(parents=True, exist_ok=True)
            made.replace(target)


MAKEFILE = re.compile(r"(^|/)(Makefile|Kbuild)$")


def built_by_makefiles(work: Repo, commit: str, changed: list[str]
                       ) -> list[str]:
    """The C files in the directories of the changed Makefiles and Kbuild
    files: their flags (ccflags-y) reach every file there."""
    dirs = sorted({str(Path(f).parent) for f in changed if MAKEFILE.search(f)})
    if not dirs:
        return []
    listing = work.git("ls-tree", "--name-only", commit, "--",
                       *(f"{d}/" for d in dirs)).split()
    return sorted(f for f in listing if f.endswith(".c"))


def saved_dir(base: Path, t: cross.Target) -> Path:
    """Where the 'before' outputs of target t are set aside."""
    return base / ("before-out" if t is cross.NATIVE
                   else f"before-out-{t.name}")


SETUP = Path(__file__).resolve().parent.parent / "setup.sh"


def install_compilers(files: list[str], log: Callable[[str], None],
                      src: Path | None = None) -> None:
    """Install the missing cross compilers files need (setup.sh install);
    if that fails, say so: their files are then named as not
    preprocessed, with the reason."""
    missing = cross.packages(files, src)
    if not missing:
        return
    log(f"  installing the cross compilers: {' '.join(missing)}")
    try:
        run([SETUP, "install", *missing], timeout=1800)
    except ToolError as e:
        log(f"  could not install {' '.join(missing)}: {e}")


def pick(files: list[str], limit: int | None) -> list[str]:
    """All files, or limit of them spread evenly over the sorted list."""
    if not limit or limit >= len(files):
        return files
    step = len(files) / limit
    return [files[int(i * step)] for i in range(limit)]


def inputs_key(work: Repo, commit: str, parent: str, message: str,
               compiler: str, allow: dict[str, str],
               cross_compilers: dict[str, str] | None = None) -> str:
    """A hash of everything a verdict depends on: both trees, the commit
    message (allowed differences must be named there), the compilers, the
    configurations, this comparison code, the targets and the allow list."""
    h = hashlib.sha256()
    trees = work.git("rev-parse", f"{parent}^{{tree}}", f"{commit}^{{tree}}")
    for part in (trees, message, compiler, ARCH, CONFIG,
                 json.dumps(cross_compilers or {}, sort_keys=True),
                 Path(__file__).read_text(),
                 Path(cross.__file__).read_text(),
                 json.dumps(allow, sort_keys=True)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def verify(ksrc: KernelTree, workdir: Path, out: Path, make: Make,
           limit: int | None = None,
           log: Callable[[str], None] = lambda s: None,
           recompute: bool = False) -> Outcome:
    """Preprocess before/after, compare, write OUT/verify and the record.

    A full run whose inputs (inputs_key) match a passing record of an
    earlier run is not redone: its verdicts are deterministic in them."""
    start = time.monotonic()
    git_dir = workdir / "baseline.git"
    work = apply_series(ksrc, workdir, out / "series",
                        conversion_subject(out / "series"))
    commit, parent, tree = find_conversion(work)
    log(f"  {out / 'series'} applied up to {commit[:12]}: "
        f"{time.monotonic() - start:.1f} s")
    message = work.git("log", "--format=%B", f"{parent}..{commit}")
    changed = work.git("diff-tree", "-r", "--name-only", "--no-renames",
                       parent, commit).split()
    direct = {f for f in changed if f.endswith(".c")}
    flagged = set(built_by_makefiles(work, commit, changed)) - direct
    touched = sorted(direct | flagged)
    files = pick(touched, limit)
    compiler = run(["gcc", "--version"]).stdout.splitlines()[0]
    groups = cross.group(files, work.work_tree)
    install_compilers(files, log, work.work_tree)
    cross_compilers = {
        t.describe(): run([t.compiler, "--version"]).stdout.splitlines()[0]
        for t in groups if t is not cross.NATIVE and t.available()}
    allow = convert.read_allow()
    key = inputs_key(work, commit, parent, message, compiler, allow,
                     cross_compilers)
    old = recorded(workdir, tree)
    if limit is None and not recompute and old is not None \
            and old.inputs == key and old.passed and old.complete:
        log(f"  recorded result for the same inputs (both trees, the "
            f"commit message, the compilers, the configurations, "
            f"verify.py, the allow list) reused from {workdir / 'verify' / 'results'}; "
            "--recompute redoes it")
        write_results(old, out / "verify", {}, {})
        return old
    outcome = Outcome(commit, parent, tree, compiler, total=len(touched),
                      inputs=key, cross=cross_compilers,
                      by_makefile=len(flagged))
    base = workdir / "verify"
    drop_old_layout(base, log)
    sides = {"before": parent, "after": commit}
    runnable = {t: fs for t, fs in groups.items() if t.available()}
    for t, fs in groups.items():
        if t not in runnable:
            why = cross.unknown_reason(t) or t.unavailable_reason()
            outcome.files += [FileResult(f, Verdict.FAILED, why) for f in fs]
    logs: dict[str, str] = {}
    src = base / "src"
    for side, rev in sides.items():
        src = attach_worktree(git_dir, rev, base / "src").work_tree
        assert src is not None
        logs[side] = ""
        for t, fs in runnable.items():
            build = base / t.build_name
            m = replace(make, target=t)
            suffix = "" if t is cross.NATIVE else f" ({t.name})"
            start_t = time.monotonic()
            options = sorted({o for f in fs for o in cross.options_for(src, f)}) \
                if t is not cross.NATIVE else []
            did = prepare(m, src, build, rev, options)
            took = round(time.monotonic() - start_t, 1)
            outcome.seconds[f"prepare {side}{suffix}"] = took
            what = (f"configured ({t.describe()}"
                    f"{' + ' + ' '.join(options) if options else ''}) and "
                    "prepared" if did else "build directory already prepared")
            log(f"  {side} ({rev[:12]}){suffix}: {what}: {took:.1f} s")
            start_t = time.monotonic()
            text = preprocess(m, src, build, fs)
            took = round(time.monotonic() - start_t, 1)
            outcome.seconds[f"preprocess {side}{suffix}"] = took
            log(f"  {side}{suffix}: {len(fs)} files preprocessed: {took:.1f} s")
            if side == "before":
                saved = saved_dir(base, t)
                set_aside(src, build, fs, saved)
                # the log then names the outputs where they now are
                text = text.replace(f"{src}/", f"{saved}/")
            logs[side] += f"### {t.describe()}\n{text}"
    t0 = time.monotonic()
    digests = Digests(base / "digests.json")
    diffs: dict[str, str] = {}
    for t, fs in runnable.items():
        saved = saved_dir(base, t)
        diffs.update(compare(outcome, fs, {
            "before": (saved, saved), "after": (src, base / t.build_name)},
            logs, allow, message, digests))
    outcome.files.sort(key=lambda r: r.path)
    digests.save()
    outcome.seconds["compare"] = round(time.monotonic() - t0, 1)
    outcome.seconds["total"] = round(time.monotonic() - start, 1)
    write_results(outcome, out / "verify", logs, diffs)
    if outcome.complete:
        record = base / "results" / f"{tree}.json"
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(outcome.to_json())
    return outcome


def compare(outcome: Outcome, files: list[str],
            dirs: dict[str, tuple[Path, Path]], logs: dict[str, str],
            allow: dict[str, str], message: str,
            digests: Digests) -> dict[str, str]:
    """Judge each file from the .i files of the before/after build dirs
    (dirs: side -> (source, build)); return the differences to show."""
    diffs: dict[str, str] = {}
    for f in files:
        outs = {s: output(src, build, f) for s, (src, build) in dirs.items()}
        missing = [s for s, p in outs.items() if not p.is_file()]
        if missing:
            why = {s: first_error(logs.get(s, ""), dirs[s][0], f)
                   for s in missing}
            detail = "; ".join(sorted(set(why.values()))) \
                if len(set(why.values())) == 1 and len(why) == 2 \
                else "; ".join(f"{s}: {w}" for s, w in why.items())
            outcome.files.append(FileResult(f, Verdict.FAILED, detail))
        elif same_bytes(outs["before"], outs["after"]) or \
                digests.get(outs["before"]) == digests.get(outs["after"]):
            outcome.files.append(FileResult(f, Verdict.IDENTICAL))
            if f in allow:
                outcome.problems.append(
                    f"{f}: in cocci/equivalence.allow but its output does "
                    "not change; drop it")
        else:
            diffs[f] = show_difference(outs["before"], outs["after"])
            if f in allow:
                outcome.files.append(FileResult(f, Verdict.ALLOWED, allow[f]))
                if f not in message:
                    outcome.problems.append(
                        f"{f}: allowed in cocci/equivalence.allow but not "
                        "named in the commit message; run 'make' again")
            else:
                outcome.files.append(FileResult(f, Verdict.DIFFERENT))
    return diffs


def summary_text(o: Outcome) -> str:
    lines = [
        f"commit {o.commit} (tree {o.tree})",
        f"parent {o.parent}",
        f"configuration: {ARCH} {CONFIG}, {o.compiler}",
        *(f"configuration: {conf} (the files of its arch/), {version}"
          for conf, version in sorted(o.cross.items())),
        f"files: {len(o.files)} of {o.what()}"
        + ("" if o.complete else " (a subset: not recorded for the cover letter)"),
        o.counts(),
    ]
    lines += [f"problem: {p}" for p in o.problems]
    lines += [f"seconds {k}: {v}" for k, v in sorted(o.seconds.items())]
    return "\n".join(lines) + "\n"


def write_results(o: Outcome, dest: Path, logs: dict[str, str],
                  diffs: dict[str, str]) -> None:
    """OUT/verify: summary, one list per verdict, make logs, differences."""
    if dest.exists():
        for p in sorted(dest.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.txt").write_text(summary_text(o))
    (dest / "result.json").write_text(o.to_json())
    for v, name in ((Verdict.IDENTICAL, "identical"),
                    (Verdict.DIFFERENT, "different"),
                    (Verdict.ALLOWED, "allowed"),
                    (Verdict.FAILED, "not-preprocessed")):
        (dest / f"{name}.txt").write_text("".join(
            f"{f.path}{': ' + f.detail if f.detail else ''}\n"
            for f in o.of(v)))
    for side, text in logs.items():
        (dest / f"make-{side}.log").write_text(text)
    for f, text in sorted(diffs.items()):
        p = dest / "diffs" / (f + ".diff")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")


def recorded(workdir: Path, tree: str) -> Outcome | None:
    """The full run recorded for this tree hash, if there is one."""
    record = workdir / "verify" / "results" / f"{tree}.json"
    if not record.is_file():
        return None
    return Outcome.from_json(record.read_text())


def cover_lines(workdir: Path, repo: Repo) -> str:
    """The cover letter's equivalence figures for the series in repo."""
    try:
        _, _, tree = find_conversion(repo)
    except ToolError:
        return "  - equivalence: no ns-string commit in this series"
    o = recorded(workdir, tree)
    if o is None:
        return ("  - equivalence of the preprocessed output: not run for "
                "this series; make verify")
    failed = o.of(Verdict.FAILED)
    others = "".join(f", {conf} for the files of its arch/ ({version})"
                     for conf, version in sorted(o.cross.items()))
    head = textwrap.fill(
        f"- equivalence (make verify): {o.what()}, preprocessed before and "
        f"after it with {ARCH} {CONFIG} ({o.compiler}){others}, compared "
        "without line markers and whitespace:", width=72,
        initial_indent="  ", subsequent_indent="    ",
        break_long_words=False, break_on_hyphens=False)
    lines = [head,
             f"    {len(o.of(Verdict.IDENTICAL))} identical, "
             f"{len(o.of(Verdict.DIFFERENT))} different, "
             f"{len(o.of(Verdict.ALLOWED))} different but allowed,\n"
             f"    {len(failed)} could not be preprocessed"
             f"{':' if failed else ''}"]
    def item(text: str) -> str:
        return textwrap.fill(text, 72, initial_indent="      ",
                             subsequent_indent="        ",
                             break_long_words=False, break_on_hyphens=False)

    lines.extend(item(f"{f.path} ({f.detail})") for f in failed)
    for f in o.of(Verdict.ALLOWED):
        lines.append(item(f"allowed: {f.path}: {f.detail}"))
    for f in o.of(Verdict.DIFFERENT):
        lines.append(f"      DIFFERENT: {f.path}")
    return "\n".join(lines)
