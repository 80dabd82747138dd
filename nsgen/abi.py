"""The module ABI before and after the series: genksyms CRCs and layouts.

A module built against the pristine tree loads on the patched kernel when
every symbol version (genksyms CRC) it recorded is the same there and the
structures it shares with the kernel keep their layout.  A CRC is a
function of the exported declaration with every type it reaches expanded,
as genksyms sees it (preprocessed with -D__GENKSYMS__), so it can change
only where a type's definition or a declaration changes, and only in the
files the hand-written patches touch (the treewide conversion changes
namespace arguments only, which genksyms leaves out of the CRC and
'make verify' proves preprocess to the same code).

So the check compares, between the pristine tree and the series:

- the genksyms expansion (scripts/genksyms/genksyms -T, run by kbuild
  itself while it compiles the object with KBUILD_SYMTYPES=1) of every
  export of every changed .c file that exports symbols;
- a probe: every struct, union, enum and typedef defined in a changed
  public header (include/, arch/ARCH/include/), and every function and
  variable it declares, exported from one generated file, so that each
  gets the expansion any export reaching it would get;
- the layout (pahole, from the probe compiled with -g) of every struct and
  union those headers define: each member's offset and size, and the
  total size.

Equal expansions mean equal CRCs; a changed one is a changed CRC for that
export and for every export of the kernel whose types reach it.  Nothing
is built but the probe and the prepare step (x86_64 allmodconfig with
CONFIG_MODVERSIONS), in WORKDIR/abi.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from . import convert
from .run import ToolError, run
from .series import patch_files
from .tree import KernelTree, Repo, attach_worktree, snapshot
from .verify import Make, apply_series, patch_subject, prepare

PROBE = "ns-series-abi-probe"         # the probe's directory in the tree
# allmodconfig sets COMPILE_TEST, which rules MODVERSIONS out (6.12 on);
# GENKSYMS is the choice of 6.15 on (ignored before).
OPTIONS = ["!COMPILE_TEST", "MODVERSIONS", "GENKSYMS"]
LINE_MARKER = re.compile(r'^#\s*(\d+)\s+"([^"]*)"')
TOKEN = re.compile(r'[A-Za-z_]\w*|\d\w*|"(?:\\.|[^"\\])*"|'
                   r"'(?:\\.|[^'\\])*'|\S")
KEYWORDS = {"struct", "union", "enum", "typedef", "extern", "static",
            "inline", "const", "volatile", "unsigned", "signed", "void",
            "char", "short", "int", "long", "float", "double", "_Bool",
            "__attribute__", "asm", "__asm__", "__inline", "__inline__",
            "__always_inline", "__section", "register", "restrict",
            "__restrict", "typeof", "__typeof__", "_Static_assert",
            "__extension__", "noinline", "notrace", "__cold", "__must_check"}
ATTRIBUTES = {"__attribute", "__asm", "__typeof", "__alignof__",
              "__alignof", "_Alignas", "_Alignof", "__volatile__",
              "__auto_type", "__int128", "_Atomic", "__seg_gs", "__seg_fs"}


@dataclass
class Names:
    """What a header defines and declares, as the compiler sees it."""
    types: set[tuple[str, str]] = field(default_factory=set)  # (kind, name)
    decls: set[str] = field(default_factory=set)   # functions, variables

    def __or__(self, other: "Names") -> "Names":
        return Names(self.types | other.types, self.decls | other.decls)


@dataclass
class Result:
    base: str
    head: str
    config: str
    headers: list[str]
    files: list[str]                      # exporting .c files compared
    exports: int = 0                      # exports compared
    types: int = 0                        # probe types compared
    decls: int = 0                        # probe declarations compared
    layouts: int = 0                      # structs and unions compared
    crc_changes: list[str] = field(default_factory=list)
    layout_changes: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def kept(self) -> bool:
        return not (self.crc_changes or self.layout_changes or self.removed
                    or self.problems)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Result":
        return cls(**json.loads(text))


def tokens(text: str) -> Iterator[str]:
    return (m.group(0) for m in TOKEN.finditer(text))


def header_regions(text: str, headers: set[str]) -> Iterator[str]:
    """The lines of a preprocessed file that come from one of headers
    (relative to the tree; the line markers may name them by a longer
    path, with O= builds an absolute one)."""
    ours = False
    for line in text.splitlines():
        m = LINE_MARKER.match(line)
        if m:
            path = m.group(2)
            ours = any(path == h or path.endswith("/" + h) for h in headers)
            continue
        if ours:
            yield line


def names_in(text: str, headers: set[str]) -> Names:
    """Top-level definitions and declarations of the headers' lines in a
    preprocessed file: struct/union/enum tags defined with a body, typedef
    names, declared functions and extern variables (static ones and
    inline definitions are not ABI)."""
    found = Names()
    statement: list[str] = []
    depth = 0
    for tok in tokens("\n".join(header_regions(text, headers))):
        if tok == "{":
            if depth == 0 and len(statement) >= 2 and \
                    statement[-2] in ("struct", "union", "enum") and \
                    re.fullmatch(r"[A-Za-z_]\w*", statement[-1]):
                found.types.add((statement[-2], statement[-1]))
            depth += 1
            statement.append(tok)
            continue
        if tok == "}":
            depth -= 1
            statement.append(tok)
            head = statement[:statement.index("{")]
            if depth == 0 and "(" in head and statement[0] not in (
                    "struct", "union", "enum", "typedef"):
                statement = []        # a function definition: not ABI
            continue
        if depth > 0:
            statement.append(tok)
            continue
        if tok == ";":
            _declared(statement, found)
            statement = []
            continue
        statement.append(tok)
    return found


def _outside_parens(stmt: list[str]) -> Iterator[tuple[int, str]]:
    level = 0
    for i, t in enumerate(stmt):
        if t in "([":
            level += 1
        elif t in ")]":
            level -= 1
        elif level == 0:
            yield i, t


def _name(t: str) -> bool:
    """t is an identifier that names something (no keyword, attribute or
    builtin)."""
    return (re.fullmatch(r"[A-Za-z_]\w*", t) is not None
            and t not in KEYWORDS and t not in ATTRIBUTES
            and not t.startswith("__builtin"))


def _declared(stmt: list[str], found: Names) -> None:
    """What one top-level statement (up to its ';') declares."""
    if not stmt or "static" in stmt:
        return
    top = list(_outside_parens(stmt))
    names = [t for _, t in top if _name(t)]
    if stmt[0] == "typedef":
        # typedef R (*name)(args); typedef T name[N]; typedef struct {..}
        # name; (a struct's tag is taken where its body opens)
        i = stmt.index("(") if "(" in stmt else -1
        if i >= 0 and stmt[i + 1:i + 2] == ["*"] and i + 2 < len(stmt):
            found.types.add(("typedef", stmt[i + 2]))
        elif names:
            found.types.add(("typedef", names[-1]))
        return
    if "{" in stmt:
        return                  # struct X { ... }: taken above
    # a function: the first name followed by '(' at the top level
    for i, t in top:
        if i + 1 < len(stmt) and stmt[i + 1] == "(" and _name(t):
            found.decls.add(t)
            return
    if stmt[0] == "extern" and names:
        found.decls.add(names[-1])


def public(path: str, arch: str) -> bool:
    return path.endswith(".h") and (
        path.startswith("include/") or
        path.startswith(f"arch/{arch}/include/"))


def include_line(path: str, arch: str) -> str:
    for root in ("include/", f"arch/{arch}/include/"):
        if path.startswith(root):
            return f"#include <{path[len(root):]}>"
    raise ValueError(path)


def probe_source(headers: list[str], arch: str, names: Names | None) -> str:
    lines = ["/* generated by generate.py abi-check: not part of the "
             "kernel */", "#include <linux/module.h>"]
    lines += [include_line(h, arch) for h in headers]
    if names is not None:
        for kind, name in sorted(names.types):
            var = f"__abi_probe_{kind}_{name}"
            spelled = name if kind == "typedef" else f"{kind} {name}"
            lines.append(f"extern {spelled} {var};")
            lines.append(f"EXPORT_SYMBOL({var});")
            if kind in ("struct", "union"):
                lines.append(f"{spelled} *__abi_layout_{name};")
        lines += [f"EXPORT_SYMBOL({d});" for d in sorted(names.decls)]
    return "\n".join(lines) + "\n"


def symtypes(path: Path) -> dict[str, str]:
    """genksyms -T output: each definition and export by its key."""
    defs: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        key, _, rest = line.partition(" ")
        if key:
            defs[key] = rest
    return defs


def expansions(defs: dict[str, str]) -> dict[str, str]:
    """For every export (a key without '#'), a digest of its declaration
    and of every definition it reaches: equal digests, equal CRCs."""
    out: dict[str, str] = {}
    for name, decl in defs.items():
        if "#" in name:
            continue
        seen: set[str] = set()
        todo = [t for t in decl.split() if "#" in t]
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            todo += [t for t in defs.get(k, "").split() if "#" in t]
        text = decl + "\n" + "\n".join(f"{k} {defs.get(k, '?')}"
                                       for k in sorted(seen))
        out[name] = hashlib.sha256(text.encode()).hexdigest()
    return out


MEMBER = re.compile(r"^(\s*)(.*?)\s*;\s*/\*\s*(\d+)(?::\s*(\d+))?"
                    r"\s+(\d+)\s*\*/")
SIZE = re.compile(r"/\*\s*size:\s*(\d+)")


def layouts(text: str) -> dict[str, dict[str, tuple[int, int]]]:
    """pahole's output: per struct or union, each member (nesting and
    name) with its offset and size, and '<size>'."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    current: dict[str, tuple[int, int]] | None = None
    depth = 0
    for line in text.splitlines():
        m = re.match(r"^(struct|union) (\w+) \{", line)
        if m and current is None:
            current = out.setdefault(m.group(2), {})
            depth = 0
            continue
        if current is None:
            continue
        if re.search(r"\{\s*$", line):
            depth += 1
            continue
        m = MEMBER.match(line)
        if m:
            decl = re.sub(r"\[.*?\]|:\s*\d+$", "", m.group(2)).strip()
            name = re.findall(r"[A-Za-z_]\w*", decl)
            if decl.startswith("}"):
                depth -= 1
            key = f"{depth}:{name[-1] if name else '?'}"
            while key in current:
                key += "'"
            current[key] = (int(m.group(3)) * 8 + int(m.group(4) or 0),
                            int(m.group(5)))
            continue
        m = SIZE.search(line)
        if m and depth == 0:
            current["<size>"] = (0, int(m.group(1)))
        if line.startswith("}"):      # } [attributes];
            current = None
    return out


def changed_files(repo: Repo, base: str, head: str) -> list[str]:
    """The files the series changes, but for the treewide conversion."""
    files: set[str] = set()
    for c in repo.git("rev-list", f"{base}..{head}").split():
        subject = repo.git("log", "-1", "--format=%s", c).strip()
        if convert.is_ns_string(subject):
            continue
        files |= set(repo.git("diff-tree", "-r", "--name-only",
                              "--no-renames", f"{c}^", c).split())
    return sorted(files)


def exporting(src: Path, files: list[str]) -> list[str]:
    """The kernel's .c files among files that export symbols (host
    programs under scripts/ and tools/ are not the kernel's)."""
    return [f for f in files if f.endswith(".c") and (src / f).is_file()
            and not f.startswith(("scripts/", "tools/"))
            and re.search(r"^\s*EXPORT_SYMBOL", (src / f).read_text(
                errors="replace"), re.M)]


@dataclass
class Side:
    names: Names
    crcs: dict[str, dict[str, str]]       # file -> export -> digest
    layouts: dict[str, dict[str, tuple[int, int]]]
    problems: list[str]


def measure(make: Make, src: Path, build: Path, rev: str,
            headers: list[str], files: list[str], names: Names | None,
            log: Callable[[str], None]) -> Side:
    """One tree: the probe's names (when names is None), or the probe
    with names and the files' symtypes and the layouts."""
    arch = make.target.arch
    probe = src / PROBE
    probe.mkdir(exist_ok=True)
    # kbuild reaches the probe's directory from the top (no Makefile names
    # it), so its flags are the top's: -g comes through KCFLAGS.
    (probe / "Kbuild").write_text("# generate.py abi-check's probe\n")
    problems: list[str] = []
    (probe / "probe.c").write_text(probe_source(headers, arch, None))
    out = make(src, build, f"{PROBE}/probe.i", keep_going=True)
    text = (build / PROBE / "probe.i")
    if not text.is_file():
        raise ToolError(f"abi-check: the probe including {', '.join(headers)}"
                        f" does not preprocess at {rev[:12]}:\n{out[-2000:]}")
    found = names_in(text.read_text(errors="replace"), set(headers))
    if names is None:
        return Side(found, {}, {}, [])
    gone = Names(names.types - found.types, names.decls - found.decls)
    present = Names(names.types - gone.types, names.decls - gone.decls)
    (probe / "probe.c").write_text(probe_source(headers, arch, present))
    # The objects, with KBUILD_SYMTYPES=1: kbuild runs genksyms on each
    # that exports and keeps its -T output as FILE.symtypes (a target of
    # its own before 7.0 only).  Stale ones first out of the way.
    for f in [f"{PROBE}/probe.c", *files]:
        (build / (f[:-2] + ".symtypes")).unlink(missing_ok=True)
    targets = [f[:-2] + ".o" for f in [f"{PROBE}/probe.c", *files]]
    out = make(src, build, "KCFLAGS=-g", "KBUILD_SYMTYPES=1", *targets,
               keep_going=True)
    crcs: dict[str, dict[str, str]] = {}
    for f in [f"{PROBE}/probe.c", *files]:
        st = build / (f[:-2] + ".symtypes")
        if not st.is_file():
            problems.append(f"{f}: no symtypes at {rev[:12]}: "
                            f"{first_errors(out)}")
            continue
        crcs[f] = expansions(symtypes(st))
    lay: dict[str, dict[str, tuple[int, int]]] = {}
    obj = build / PROBE / "probe.o"
    structs = sorted(n for k, n in present.types if k in ("struct", "union"))
    if not obj.is_file():
        problems.append(f"the probe did not compile at {rev[:12]}: "
                        f"{first_errors(out)}")
    elif structs:
        p = run(["pahole", "-C", ",".join(structs), str(obj)], check=False)
        if p.returncode != 0:
            problems.append(f"pahole failed: {p.stdout[-300:]}")
        lay = layouts(p.stdout)
    problems += [f"{k} {n} is gone from the headers" for k, n in
                 sorted(gone.types)] + [f"{d} is no longer declared in the "
                                       "headers" for d in sorted(gone.decls)]
    return Side(found, crcs, lay, problems)


def first_errors(out: str, n: int = 3) -> str:
    """The first lines of make's output that say what went wrong."""
    bad = [line.strip() for line in out.splitlines()
           if re.search(r"error:|Error \d|not found|No such file", line)]
    return "; ".join(bad[:n]) or "make gave no reason"


def compare(before: Side, after: Side, result: Result) -> None:
    for f, exports in sorted(before.crcs.items()):
        now = after.crcs.get(f)
        if now is None:
            continue
        for name, digest in sorted(exports.items()):
            result.exports += 1
            if name not in now:
                result.removed.append(f"{f}: {name}")
            elif now[name] != digest:
                what = name
                m = re.match(r"__abi_probe_(\w+?)_(\w+)$", name)
                if m:
                    what = f"{m.group(1)} {m.group(2)} (every export that "\
                        "reaches it)"
                result.crc_changes.append(f"{f}: {what}")
    for name, members in sorted(before.layouts.items()):
        result.layouts += 1
        now = after.layouts.get(name, {})
        for key, (off, size) in members.items():
            if key not in now:
                result.layout_changes.append(
                    f"{name}: member {key.split(':', 1)[1]} is gone")
            elif now[key] != (off, size):
                o2, s2 = now[key]
                what = "size" if key == "<size>" else \
                    f"member {key.split(':', 1)[1]}"
                result.layout_changes.append(
                    f"{name}: {what}: bit offset {off} size {size} -> bit "
                    f"offset {o2} size {s2}")


def check_revs(repo: Repo, git_dir: Path, workdir: Path, base: str,
               head: str, make: Make, log: Callable[[str], None]) -> Result:
    """Compare base and head in WORKDIR/abi."""
    start = time.monotonic()
    arch = make.target.arch
    files = changed_files(repo, base, head)
    headers = [f for f in files if public(f, arch)]
    result = Result(base, head, f"{arch} {make.target.config}, "
                    "COMPILE_TEST off, MODVERSIONS on", headers, [])
    if shutil.which("pahole") is None:
        raise ToolError("pahole: not found; run 'make deps' (Debian package "
                        "dwarves)")
    abi = workdir / "abi"
    build = abi / arch
    sides: dict[str, Side] = {}
    names: Names | None = None
    for side, rev in (("before", base), ("after", head)):
        src = attach_worktree(git_dir, rev, abi / "src").work_tree
        assert src is not None
        t = time.monotonic()
        did = prepare(make, src, build, rev, OPTIONS)
        make(src, build, "scripts")     # genksyms (6.12 on: not in prepare)
        what = "configured and prepared" if did else "prepared already"
        log(f"  {side} ({rev[:12]}): {what}: {time.monotonic() - t:.1f} s")
        if side == "before":     # what modules built before could use
            result.files = exporting(src, files)
            headers = result.headers = [h for h in headers
                                        if (src / h).is_file()]
        t = time.monotonic()
        if names is None:       # the pristine tree's names, probed on both
            names = measure(make, src, build, rev, headers, result.files,
                            None, log).names
        sides[side] = measure(make, src, build, rev, headers, result.files,
                              names, log)
        log(f"  {side}: {len(names.types)} types, {len(names.decls)} "
            f"declarations of {len(headers)} headers and "
            f"{len(result.files)} exporting files measured: "
            f"{time.monotonic() - t:.1f} s")
        result.seconds[side] = round(time.monotonic() - t, 1)
    assert names is not None
    result.types, result.decls = len(names.types), len(names.decls)
    result.problems = sides["before"].problems + sides["after"].problems
    compare(sides["before"], sides["after"], result)
    result.seconds["total"] = round(time.monotonic() - start, 1)
    return result


def series_revs(ksrc: KernelTree, workdir: Path, series_dir: Path
                ) -> tuple[Repo, str, str]:
    """The series applied with git am in WORKDIR/am, as verify and apply
    do: the work tree, the pristine commit and the series' last one."""
    patches = patch_files(series_dir)
    repo = apply_series(ksrc, workdir, series_dir,
                        patch_subject(patches[-1]))
    _, base, _ = snapshot(ksrc, workdir)
    return repo, base, repo.git("rev-parse", "HEAD").strip()


def record_path(workdir: Path, repo: Repo) -> Path:
    """Where the result for the series in repo is kept, by its tree."""
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    return workdir / "abi" / "results" / f"{tree}.json"


def check(ksrc: KernelTree, workdir: Path, out: Path, make: Make,
          log: Callable[[str], None]) -> Result:
    """The series of OUT/series against the pristine tree; the result in
    OUT/abi and recorded for the cover letter."""
    repo, base, head = series_revs(ksrc, workdir, out / "series")
    result = check_revs(repo, workdir / "baseline.git", workdir, base, head,
                        make, log)
    write(result, out / "abi")
    record = record_path(workdir, repo)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(result.to_json())
    return result


def write(result: Result, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "result.json").write_text(result.to_json())
    (dest / "crc-changes.txt").write_text(
        "".join(f"{c}\n" for c in result.crc_changes + result.removed))
    (dest / "layout-changes.txt").write_text(
        "".join(f"{c}\n" for c in result.layout_changes))
    (dest / "summary.txt").write_text(summary(result) + "\n")


def summary(r: Result) -> str:
    verdict = "kept" if r.kept else "CHANGED"
    lines = [f"module ABI {verdict}: {r.base[:12]} (pristine) -> "
             f"{r.head[:12]} (series), {r.config}",
             f"  {r.exports} genksyms expansions compared: the exports of "
             f"{len(r.files)} changed files ({', '.join(r.files) or 'none'})"
             f" and a probe of {r.types} types and {r.decls} declarations "
             f"of {len(r.headers)} changed headers "
             f"({', '.join(r.headers) or 'none'}); "
             f"{len(r.crc_changes)} changed, {len(r.removed)} gone",
             f"  {r.layouts} structs and unions laid out by pahole: "
             f"{len(r.layout_changes)} changes"]
    lines += [f"  CRC: {c}" for c in r.crc_changes]
    lines += [f"  gone: {c}" for c in r.removed]
    lines += [f"  layout: {c}" for c in r.layout_changes]
    lines += [f"  problem: {p}" for p in r.problems[:6]]
    if len(r.problems) > 6:
        lines.append(f"  ... and {len(r.problems) - 6} more problems "
                     "(result.json)")
    return "\n".join(lines)


def recorded(workdir: Path, repo: Repo) -> Result | None:
    record = record_path(workdir, repo)
    return Result.from_json(record.read_text()) if record.is_file() else None


def cover_lines(workdir: Path, repo: Repo) -> str:
    """The cover letter's ABI lines for the series in repo."""
    r = recorded(workdir, repo)
    if r is None:
        return ("  - module ABI: not checked for this series; "
                "make abi-check")
    if r.kept:
        text = (f"- module ABI (make abi-check, {r.config}): kept. "
                f"{r.exports} genksyms expansions (the exports of the "
                f"{len(r.files)} changed files that export, a probe of "
                f"{r.types} types and {r.decls} declarations of the "
                f"{len(r.headers)} changed headers) are equal before and "
                f"after; {r.layouts} structs and unions are laid out the "
                "same (pahole)")
    else:
        text = (f"- this series changes the module ABI (make abi-check, "
                f"{r.config}): {len(r.crc_changes)} genksyms expansions "
                f"changed, {len(r.removed)} gone, {len(r.layout_changes)} "
                "layout changes; the lists are in abi/ beside the series")
    return textwrap.fill(text, width=72, initial_indent="  ",
                         subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False)
