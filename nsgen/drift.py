"""Hand-written patches on trees that drifted from the one they were
written on.

A stored patch is first tried as git am takes it (offsets allowed, no
fuzz).  GNU patch then says, hunk by hunk, where each one lands on this
tree: at its line, at an offset, with fuzz (context lines at a hunk's
ends ignored, at most MAX_FUZZ), or not at all.  A patch that needs fuzz
is applied by GNU patch and committed from the result, so that the series
carries the context of this tree (and applies exactly, as dpkg-source's
-F 0 wants).  A patch with a hunk that lands nowhere is refused with the
hunk named, and a refresh tree is left for the maintainer: the earlier
steps applied, this step applied as far as it goes, the rejected hunks in
FILE.rej.  'generate.py refresh STEP' turns the tree the maintainer fixed
into the step's new text or a new variant (refresh()).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .run import ToolError, run
from .tree import GIT_ENV, GIT_OVERRIDES

# GNU patch's own default: at most two context lines at each end of a
# hunk may be ignored.
MAX_FUZZ = 2
# Under WORKDIR: the trees left for the maintainer, one per step, and the
# record of what each was made from.
REFRESH_DIR = "refresh"
HUNK_RE = re.compile(r"Hunk #(\d+) (succeeded|FAILED) at (\d+)"
                     r"(?: with fuzz (\d+))?(?: \(offset (-?\d+) lines?\))?")
FILE_RE = re.compile(r"^(?:checking|patching) file (.+?)"
                     r"(?: \(read from .*\))?$")


@dataclass(frozen=True)
class Hunk:
    path: str
    number: int         # 1-based, within its file
    line: int           # where GNU patch put it (or looked, when failed)
    offset: int = 0
    fuzz: int = 0
    failed: bool = False
    where: str = ""     # the function the @@ line names


@dataclass
class Fit:
    """How a stored patch fits a tree."""
    patch: Path
    exact: bool                      # git apply --check accepts it
    hunks: list[Hunk] = field(default_factory=list)
    # GNU patch's complaint when it failed without naming a hunk (a file
    # to create exists already, ...)
    trouble: str = ""

    @property
    def failed(self) -> list[Hunk]:
        return [h for h in self.hunks if h.failed]

    @property
    def fuzzed(self) -> list[Hunk]:
        return [h for h in self.hunks if h.fuzz and not h.failed]

    @property
    def moved(self) -> list[Hunk]:
        return [h for h in self.hunks if h.offset and not h.failed]

    def drift(self) -> str:
        """'' for a patch that applies as written; else where it drifted,
        for the cover letter: offsets and fuzz, by file."""
        parts = []
        for path in dict.fromkeys(h.path for h in self.hunks):
            mine = [h for h in self.hunks if h.path == path and not h.failed
                    and (h.offset or h.fuzz)]
            if not mine:
                continue
            said = []
            for h in mine:
                bits = []
                if h.offset:
                    bits.append(f"{h.offset:+d} lines")
                if h.fuzz:
                    bits.append(f"fuzz {h.fuzz}")
                said.append(f"hunk {h.number} " + ", ".join(bits))
            parts.append(f"{path}: " + "; ".join(said))
        return "; ".join(parts)

    def touched_sources(self) -> list[str]:
        """The C files the patch changes (to compile them)."""
        return sorted({h.path for h in self.hunks if h.path.endswith(".c")})


def _hunk_functions(patch: Path) -> dict[tuple[str, int], str]:
    """(file, hunk number) -> the function name of its @@ line."""
    out: dict[tuple[str, int], str] = {}
    path, n = "", 0
    for line in patch.read_text(errors="replace").splitlines():
        m = re.match(r"^\+\+\+ (?:b/)?(\S+)", line)
        if m:
            path, n = m.group(1), 0
            continue
        if line.startswith("@@ ") and path:
            n += 1
            out[(path, n)] = line.split("@@", 2)[-1].strip()
    return out


def gnu_patch(root: Path, patch: Path, dry_run: bool,
              fuzz: int = MAX_FUZZ) -> tuple[int, str]:
    """GNU patch -p1 in root: (exit code, its report).  -f: never ask, and
    never take a patch for a reversed one."""
    cmd = ["patch", "-p1", "-f", f"-F{fuzz}", "--no-backup-if-mismatch",
           "-d", str(root), "-i", str(patch.resolve())]
    if dry_run:
        cmd.insert(1, "--dry-run")
    p = run(cmd, check=False, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    return p.returncode, p.stdout + p.stderr


def parse_report(report: str, patch: Path) -> list[Hunk]:
    """The hunks GNU patch reported on; hunks it did not name landed where
    the patch says."""
    names = _hunk_functions(patch)
    named: dict[tuple[str, int], Hunk] = {}
    path = ""
    for line in report.splitlines():
        m = FILE_RE.match(line)
        if m:
            path = m.group(1)
            continue
        m = HUNK_RE.search(line)
        if m and path:
            n = int(m.group(1))
            named[(path, n)] = Hunk(
                path, n, int(m.group(3)), int(m.group(5) or 0),
                int(m.group(4) or 0), m.group(2) == "FAILED",
                names.get((path, n), ""))
    hunks = []
    for (path, n), where in names.items():
        hunks.append(named.get((path, n), Hunk(path, n, 0, where=where)))
    return hunks


def fit(root: Path, patch: Path, exact: bool) -> Fit:
    """Where each hunk of patch lands on the tree in root (nothing
    written)."""
    rc, report = gnu_patch(root, patch, dry_run=True)
    f = Fit(patch, exact, parse_report(report, patch))
    if rc != 0 and not f.failed:
        missing = [p for p in dict.fromkeys(h.path for h in f.hunks)
                   if not (root / p).exists()
                   and f"--- /dev/null\n+++ b/{p}\n" not in
                   patch.read_text(errors="replace")]
        f.trouble = (f"{', '.join(missing)}: no such file" if missing else
                     (report.strip().splitlines() or ["?"])[-1])
    return f


def describe_failed(f: Fit) -> str:
    """'FILE hunk N (in FUNCTION, line L)' for each hunk that lands nowhere."""
    said = [f.trouble] if f.trouble else []
    for h in f.failed:
        where = f" in {h.where}" if h.where else ""
        said.append(f"{h.path} hunk {h.number}{where} (near line {h.line})")
    return ", ".join(said)


def splice(stored: str, new_tail: str) -> str:
    """The stored patch's header, message and notes, with the diffstat and
    diff of new_tail (git format-patch output from its diffstat on)."""
    lines = stored.splitlines(keepends=True)
    try:
        sep = next(i for i, x in enumerate(lines) if x == "---\n")
    except StopIteration:
        raise ToolError("the stored patch has no '---' line") from None
    stat = re.compile(r"^ \S.* \| +(\d+|Bin)")
    start = next((i for i in range(sep + 1, len(lines))
                  if stat.match(lines[i])
                  or lines[i].startswith("diff --git ")),
                 None)
    if start is None:
        raise ToolError("the stored patch has no diffstat or diff")
    return "".join(lines[:start]) + new_tail


def format_tail(git: list[str], commit: str, cwd: Path | None = None) -> str:
    """git format-patch of one commit, from its diffstat to the end, with
    the project's git settings (12-digit abbreviations, no signature); git
    is the command that names the repository."""
    text = run([*git, "format-patch", "-1", "--stdout", commit], cwd=cwd,
               env=GIT_ENV).stdout
    lines = text.splitlines(keepends=True)
    sep = next(i for i, x in enumerate(lines) if x == "---\n")
    return "".join(lines[sep + 1:])


# --- the refresh tree ------------------------------------------------------

def refresh_paths(workdir: Path, step: str) -> tuple[Path, Path]:
    """(the refresh tree of step, its record)."""
    stem = step.removesuffix(".patch")
    return (workdir / REFRESH_DIR / stem,
            workdir / REFRESH_DIR / f"{stem}.json")


def leave_refresh_tree(git_dir: Path, commit: str, workdir: Path, step: str,
                       f: Fit, patch_name: str, kernel: str, line: str,
                       probes: list[str]) -> Path:
    """A work tree at commit (the steps before this one) with the patch of
    f applied as far as it goes and FILE.rej beside each file a hunk
    missed; kept until the maintainer refreshes the step or removes it.
    probes: 'FILE REGEX -- WHY' of the patch chosen, which a new variant
    keeps."""
    tree, record = refresh_paths(workdir, step)
    if tree.exists() or record.exists():
        return tree
    tree.parent.mkdir(parents=True, exist_ok=True)
    run(["git", *GIT_OVERRIDES, f"--git-dir={git_dir}", "worktree", "add",
         "-q", "--detach", str(tree), commit], env=GIT_ENV)
    gnu_patch(tree, f.patch, dry_run=False)
    record.write_text(json.dumps({
        "step": step, "patch": patch_name, "base": commit,
        "git_dir": str(git_dir), "kernel": kernel, "line": line,
        # where the tree differs from what the patch expects
        "failed_files": sorted({h.path for h in f.failed}
                               or {h.path for h in f.fuzzed}),
        "probes": probes}, indent=1) + "\n")
    return tree


def rejects(tree: Path) -> list[str]:
    """What still stops a refresh: *.rej files, and conflict markers in
    the files that changed."""
    # not --exclude-standard: Debian's .gitignore ignores every new file
    left = run(["git", "ls-files", "--others", "-z"],
               cwd=tree, env=GIT_ENV).stdout.split("\0")
    bad = sorted(x for x in left if x.endswith((".rej", ".orig")))
    changed = run(["git", "diff", "--name-only", "-z", "HEAD"], cwd=tree,
                  env=GIT_ENV).stdout.split("\0")
    for name in filter(None, changed + [x for x in left if x]):
        f = tree / name
        if f.is_file() and re.search(rb"^(<<<<<<<|>>>>>>>) ", f.read_bytes(),
                                     re.M):
            bad.append(f"{name} (conflict markers)")
    return bad


@dataclass
class Refreshed:
    path: Path              # the patch written
    new_variant: str        # the variant created, '' for a new text
    probes: list[str]       # steps.conf lines added


def regex_of(line: str) -> str:
    """A regular expression for a line of code: its metacharacters escaped,
    its spaces left as they are (re.escape() would escape them too)."""
    return re.sub(r"([\\.^$*+?{}\[\]|()])", r"\\\1", line)


def _seen(text: str, kinds: str) -> dict[str, set[str]]:
    """file -> the lines of a patch's hunks that start with one of kinds
    ('-': removed, ' ': context), stripped: what it expects the tree to
    have."""
    out: dict[str, set[str]] = {}
    path = ""
    for line in text.splitlines():
        m = re.match(r"^--- (?:a/)?(\S+)", line)
        if m:
            path = m.group(1)
            continue
        if line.startswith("diff --git "):
            path = ""
        if line[:1] in kinds and line[:1] and path and \
                not line.startswith("--- "):
            out.setdefault(path, set()).add(line[1:].strip())
    return out


def probe_for(old: str, new: str, files: list[str]) -> tuple[str, str] | None:
    """A line this tree shows that the old patch did not expect, in one of
    files (FILE, the line): the longest line the new patch removes that
    the old one did not remove; else the longest of its context lines that
    the old one did not have."""
    for kinds in ("-", " -"):
        was, now = _seen(old, kinds), _seen(new, kinds)
        for path in files:
            for line in sorted(now.get(path, set()) - _seen(old, " -").get(
                    path, set()) - was.get(path, set()), key=len,
                    reverse=True):
                if len(line) >= 12:
                    return path, line
    return None


def refresh(workdir: Path, step: str, patch_dir: Path, conf: Path,
            jobs: int) -> Refreshed:
    """Turn the maintainer's refresh tree of step into the step's text for
    this tree's line: patches/LINE/STEP, a new variant (its probes added
    to conf before the step's other variants) unless the refused patch was
    that file already.  The C files it changes must compile, and the
    result must apply exactly to the tree before the step."""
    tree, record = refresh_paths(workdir, step)
    if not record.is_file() or not tree.is_dir():
        raise ToolError(f"no refresh tree for {step} in "
                        f"{workdir / REFRESH_DIR}: generate.py leaves one "
                        "when a step is refused")
    info = json.loads(record.read_text())
    bad = rejects(tree)
    if bad:
        raise ToolError(f"{tree}: still to fix: {', '.join(bad)} (apply the "
                        "rejected hunks by hand, then delete the .rej files)")
    git = ["git", *GIT_OVERRIDES]
    # the C files the fixed tree changes must compile
    changed = run(git + ["diff", "--name-only", "HEAD"], cwd=tree,
                  env=GIT_ENV).stdout.split()
    compile_sources(tree, workdir / REFRESH_DIR / "build", jobs,
                    [c for c in changed if c.endswith(".c")])
    # -f: Debian's .gitignore ignores every file that is not tracked
    run(git + ["add", "-f", "-A", "."], cwd=tree, env=GIT_ENV)
    if not run(git + ["diff", "--cached", "--name-only", "HEAD"], cwd=tree,
               env=GIT_ENV).stdout.strip():
        raise ToolError(f"{tree}: no change against the tree before {step}")
    run(git + ["commit", "-q", "--no-verify", "-m", f"refresh {step}"],
        cwd=tree, env=GIT_ENV)
    old_path = patch_dir / info["patch"]
    old = old_path.read_text(encoding="utf-8", errors="surrogateescape")
    text = splice(old, format_tail(git, "HEAD", tree))
    line = info["line"]
    target = patch_dir / line / step
    new_variant = "" if old_path.resolve() == target.resolve() else line
    # applies exactly to the tree before the step
    run(git + ["checkout", "-q", "--detach", info["base"]], cwd=tree,
        env=GIT_ENV)
    tmp = workdir / REFRESH_DIR / f"{step}.new"
    tmp.write_text(text, encoding="utf-8", errors="surrogateescape")
    p = run(git + ["apply", "--check", str(tmp)], cwd=tree, env=GIT_ENV,
            check=False)
    if p.returncode != 0:
        raise ToolError(f"the refreshed {step} does not apply exactly to the "
                        f"tree before it: {p.stderr.strip()[:200]}")
    p = run(["patch", "--dry-run", "-p1", "-F0", "-f", "-s", "-i", str(tmp)],
            cwd=tree, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
            check=False)
    if p.returncode != 0:
        raise ToolError(f"the refreshed {step} needs fuzz on the tree "
                        "before it (dpkg-source applies with -F 0)")
    probes: list[str] = []
    if new_variant:
        found = probe_for(old, text, info["failed_files"])
        if found is None:
            raise ToolError(
                f"{step}: the fixed tree removes no line the old patch did "
                f"not: write the variant's probe for {line} into "
                f"{conf.name} by hand ({tmp} is the new text)")
        path, shown = found
        why = (f"{path} has code {info['patch']} does not expect "
               f"(refreshed on {info['kernel']})")
        probes = [f"variant: {line} {path} ^\\s*{regex_of(shown)}\\s*$ "
                  f"-- {why}"]
        probes += [f"variant: {line} {x}" for x in info["probes"]]
        add_variant(conf, step, probes)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(tmp), target)
    run(["git", f"--git-dir={info['git_dir']}", "worktree", "remove",
         "--force", str(tree)], env=GIT_ENV, check=False)
    shutil.rmtree(tree, ignore_errors=True)
    record.unlink()
    return Refreshed(target, new_variant, probes)


def shorten(line: str, width: int = 40) -> str:
    return line if len(line) <= width else line[:width - 3] + "..."


def add_variant(conf: Path, step: str, lines: list[str]) -> None:
    """Insert lines before the first variant (else needs) line of [step]
    in steps.conf."""
    text = conf.read_text().splitlines(keepends=True)
    try:
        head = text.index(f"[{step}]\n")
    except ValueError:
        raise ToolError(f"{conf.name}: no [{step}] section") from None
    at = None
    for i in range(head + 1, len(text)):
        if text[i].startswith("["):
            break
        if re.match(r"(variant|needs)\s*:", text[i]):
            at = i
            break
    if at is None:
        at = i if text[i].startswith("[") else len(text)
    text[at:at] = [x + "\n" for x in lines]
    conf.write_text("".join(text))


# --- the proof of a fuzzed application ------------------------------------

def compile_sources(src: Path | None, build: Path, jobs: int,
                    sources: list[str]) -> str:
    """Compile the objects of sources in the tree src (a defconfig with
    KUnit and module signing, so the loader's optional parts build too);
    say what was built.  A file that fails to compile stops the run."""
    assert src is not None
    make = ["make", "-s", "-C", str(src), f"O={build}", f"-j{jobs}"]
    targets = sorted({str(Path(s).parent) + "/" if s.startswith("scripts/")
                      else s[:-2] + ".o" for s in sources})
    if not targets:
        return "no C file touched"
    build.mkdir(parents=True, exist_ok=True)
    if not (build / ".config").is_file():
        build.mkdir(parents=True, exist_ok=True)
        run(make + ["defconfig"], timeout=600)
        run([str(src / "scripts/config"), "--file", str(build / ".config"),
             "-e", "KUNIT", "-e", "MODULE_EXPORT_FOR_KUNIT_TEST",
             "-e", "MODULE_SIG"])
        run(make + ["olddefconfig"], timeout=600)
    p = run(make + targets, timeout=3600, check=False)
    if p.returncode != 0:
        said = (p.stdout + p.stderr).strip().splitlines()
        first = next((x for x in said if " error: " in x),
                     said[-1] if said else "?")
        raise ToolError(f"{' '.join(targets)} do not compile: "
                        f"{first.replace(str(src) + '/', '')}")
    return "compiled: " + ", ".join(targets)
