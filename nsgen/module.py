"""Make an external module's namespaces build on every kernel.

Kernels before 6.13 take a namespace as a bare identifier
(MODULE_IMPORT_NS(FOO)), upstream kernels from 6.13 on only as a string
(MODULE_IMPORT_NS("FOO")), and kernels carrying this series take both in
external builds.  Code that builds on all of them spells each call both
ways under the kernel version:

    #if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
    MODULE_IMPORT_NS("FOO");
    #else
    MODULE_IMPORT_NS(FOO);
    #endif

That is what this converter writes, for the kernel's namespace macros
(cocci/ns_macros.table) and for the module's own wrappers that bake a
namespace in (the whole #define is spelled twice); a wrapper's parameter
is never quoted.  Calls already under a 6.13 version test are left alone,
so a second run changes nothing.  Prose in comments is quoted, as in the
tree.  DEFAULT_SYMBOL_NAMESPACE gets the same treatment in C (#define) and
in Kbuild files (-DDEFAULT_SYMBOL_NAMESPACE=), under a 6.12 test: Debian's
6.12 takes it as a string already.  (A 6.12.y older than the stable update
that made it a string is not covered: it would need the bare spelling.)
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .macros import IDENT_RE, defines, discover_defines, split_args
from .run import ToolError
from .sites import Kind, Site, find_sites

TABLE = Path(__file__).resolve().parent.parent / "cocci" / "ns_macros.table"
# The namespace macros take strings from 6.13 on; DEFAULT_SYMBOL_NAMESPACE
# from 6.12 on as Debian ships it (the 6.12.y stable updates brought it
# with EXPORT_SYMBOL_GPL_FOR_MODULES(); 6.1 still takes it bare).
CALLS_FROM = (6, 13)
DEFAULT_FROM = (6, 12)
VERSION_H = "#include <linux/version.h>"


def guard(version: tuple[int, int]) -> str:
    return ("#if LINUX_VERSION_CODE >= KERNEL_VERSION(%d, %d, 0)"
            % version)


def version_test(version: tuple[int, int]) -> re.Pattern[str]:
    """A conditional that already chooses the spelling by this version."""
    return re.compile(r"KERNEL_VERSION\s*\(\s*%d\s*,\s*%d\s*," % version)
C_FILE = re.compile(r"\.(c|h)$")
KBUILD_FILE = re.compile(r"(^|/)(Kbuild|Makefile)[^/]*$")
DEFAULT_NS_C = re.compile(
    r"^([ \t]*#[ \t]*define[ \t]+DEFAULT_SYMBOL_NAMESPACE[ \t]+)"
    r"(\w+|\"\w+\")([ \t]*(?:/\*.*\*/|//.*)?)$")
DEFAULT_NS_MAKE = re.compile(
    r"-DDEFAULT_SYMBOL_NAMESPACE=('\"(\w+)\"'|\\\"(\w+)\\\"|(\w+))(?=\s|$)")
NS_STRINGS_VAR = "ns-strings"
NS_STRINGS_DEF = (
    "# DEFAULT_SYMBOL_NAMESPACE is a string from Linux 6.12 on "
    "(written by generate.py module)\n"
    f"{NS_STRINGS_VAR} := $(shell test \"$(VERSION)\" -gt 6 -o "
    "\\( \"$(VERSION)\" -eq 6 -a \"$(PATCHLEVEL)\" -ge %d \\) "
    "2>/dev/null && echo y)\n" % DEFAULT_FROM[1])


@dataclass(frozen=True)
class Change:
    """One thing the converter did or left, for the report."""
    path: str
    line: int
    what: str
    warning: bool = False

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: "
                f"{'warning: ' if self.warning else ''}{self.what}")


@dataclass
class Result:
    path: str
    old: str
    new: str
    changes: list[Change]

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.old.splitlines(keepends=True),
            self.new.splitlines(keepends=True),
            f"a/{self.path}", f"b/{self.path}"))


Edit = tuple[int, int, int, str]     # line, first column, end column, text


@dataclass
class Block:
    """Lines first..last (0-based) to spell twice under a version test:
    quoted from kernel version since on, bare before."""
    first: int
    last: int
    quoted: list[Edit]
    bare: list[Edit]
    since: tuple[int, int]


def load_table(path: Path = TABLE) -> dict[str, int]:
    """NAME -> namespace argument position, from cocci/ns_macros.table."""
    table: dict[str, int] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"(\w+)\s+(\d+)", line)
        if not m:
            raise ToolError(f"{path}:{n}: expected 'NAME POSITION'")
        table[m.group(1)] = int(m.group(2))
    return table


def comment_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every C comment, string and character literals
    skipped."""
    spans = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            spans.append((i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def version_guarded_lines(lines: list[str], version: tuple[int, int]
                          ) -> set[int]:
    """0-based lines inside a conditional whose #if or #elif tests for
    this kernel version (the author already chose the spelling by it)."""
    test = version_test(version)
    stack: list[bool] = []
    guarded: set[int] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        first = i
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + lines[i]
        m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if m:
            kw, rest = m.groups()
            if kw in ("if", "ifdef", "ifndef"):
                stack.append(bool(test.search(rest)))
            elif kw == "elif" and stack:
                stack[-1] = stack[-1] or bool(test.search(rest))
            elif kw == "endif" and stack:
                stack.pop()
        elif any(stack):
            guarded.update(range(first, i + 1))
        i += 1
    return guarded


def _line_of(starts: list[int], offset: int) -> int:
    """0-based line of offset, given the offsets where lines start."""
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _spelled(lines: list[str], first: int, last: int,
             edits: list[Edit]) -> str:
    """Lines first..last with edits (line, col_start, col_end, text)."""
    out = []
    for ln in range(first, last + 1):
        s = lines[ln]
        for _, a, b, t in sorted((e for e in edits if e[0] == ln),
                                 key=lambda e: -e[1]):
            s = s[:a] + t + s[b:]
        out.append(s)
    return "\n".join(out)


def convert_c(path: str, text: str, table: dict[str, int]
              ) -> tuple[str, list[Change]]:
    """The portable form of one C file, and what was done."""
    # The module's own macros that pass a namespace on to a known one.
    macros = discover_defines(defines(path, text), table).ident
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    comments = comment_spans(text)
    guarded = version_guarded_lines(lines, CALLS_FROM)
    default_guarded = version_guarded_lines(lines, DEFAULT_FROM)
    define_spans = [(d.line - 1, d.last_line - 1) for d in defines(path, text)]
    changes: list[Change] = []
    prose: list[Site] = []
    blocks: list[Block] = []

    def in_comment(offset: int) -> bool:
        return any(a <= offset < b for a, b in comments)

    for site in find_sites(path, text, macros):
        ln = _line_of(starts, site.start)
        col = site.start - starts[ln]
        if in_comment(site.start):
            if site.kind is Kind.BARE:
                prose.append(site)
            continue
        if ln in guarded or site.kind not in (Kind.BARE, Kind.STRING):
            if site.kind is Kind.QUOTED_PARAM:
                changes.append(Change(path, ln + 1, f"{site.macro}({site.arg}"
                                      "): the macro parameter is quoted, so "
                                      "the namespace is its name; left as "
                                      "it is", warning=True))
            continue
        name = site.arg.strip('"')
        if site.kind is Kind.STRING and not IDENT_RE.match(name):
            changes.append(Change(path, ln + 1, f"{site.macro}({site.arg}): "
                                  "not an identifier, so kernels before 6.13 "
                                  "cannot take it; left as it is",
                                  warning=True))
            continue
        call = text.rfind(site.macro, 0, site.start)
        first = _line_of(starts, call)
        split = split_args(text, text.index("(", call))
        last = _line_of(starts, split[1] - 1) if split else ln
        for a, b in define_spans:
            if a <= ln <= b:
                first, last = min(first, a), max(last, b)
        end = col + (site.end - site.start)
        quoted = [(ln, col, end, f'"{name}"')]
        bare = [(ln, col, end, name)]
        blocks.append(Block(first, last, quoted, bare, CALLS_FROM))
        changes.append(Change(path, ln + 1, f"{site.macro}({site.arg}): "
                              "spelled both ways, by kernel version"))
    for m in re.finditer(r"(?m)^.*$", text):
        dm = DEFAULT_NS_C.match(m.group(0))
        ln = _line_of(starts, m.start())
        if not dm or ln in default_guarded or in_comment(m.start()):
            continue
        name = dm.group(2).strip('"')
        col = len(dm.group(1))
        end = col + len(dm.group(2))
        blocks.append(Block(ln, ln, [(ln, col, end, f'"{name}"')],
                            [(ln, col, end, name)], DEFAULT_FROM))
        changes.append(Change(path, ln + 1, f"DEFAULT_SYMBOL_NAMESPACE "
                              f"{dm.group(2)}: spelled both ways, by kernel "
                              "version"))
    # Whole comments go with the lines they touch.
    for b in blocks:
        for a, e in comments:
            la, le = _line_of(starts, a), _line_of(starts, max(a, e - 1))
            if la <= b.last and le >= b.first:
                b.first, b.last = min(b.first, la), max(b.last, le)
    merged: list[Block] = []
    for b in sorted(blocks, key=lambda b: (b.first, b.last)):
        if merged and b.first <= merged[-1].last + 1 and \
                b.since == merged[-1].since:
            merged[-1].last = max(merged[-1].last, b.last)
            merged[-1].quoted += b.quoted
            merged[-1].bare += b.bare
        elif merged and b.first <= merged[-1].last:
            raise ToolError(f"{path}:{b.first + 1}: a call and a "
                            "DEFAULT_SYMBOL_NAMESPACE on the same lines")
        else:
            merged.append(b)
    prose_edits = []
    for site in prose:
        ln = _line_of(starts, site.start)
        col = site.start - starts[ln]
        prose_edits.append((ln, col, col + len(site.arg), f'"{site.arg}"'))
        changes.append(Change(path, ln + 1, f"{site.macro}({site.arg}) in a "
                              "comment: quoted"))
    if not merged and not prose_edits:
        return text, changes
    out: list[str] = []
    ln = 0
    need_h = bool(merged) and not re.search(
        r"(?m)^\s*#\s*include\s*<linux/version\.h>", text)
    include_after = -1
    if need_h:
        for i in range(merged[0].first):
            if re.match(r"\s*#\s*include\b", lines[i]) and i not in guarded:
                include_after = i
    for b in merged:
        while ln < b.first:
            out.append(_spelled(lines, ln, ln, prose_edits))
            if ln == include_after:
                out.append(VERSION_H)
            ln += 1
        if need_h and include_after < 0:
            out.append(VERSION_H)
            need_h = False
        inner = [e for e in prose_edits if b.first <= e[0] <= b.last]
        out += [guard(b.since),
                _spelled(lines, b.first, b.last, b.quoted + inner), "#else",
                _spelled(lines, b.first, b.last, b.bare + inner), "#endif"]
        ln = b.last + 1
    while ln < len(lines):
        out.append(_spelled(lines, ln, ln, prose_edits))
        ln += 1
    return "\n".join(out), changes


def convert_kbuild(path: str, text: str) -> tuple[str, list[Change]]:
    """-DDEFAULT_SYMBOL_NAMESPACE=FOO by kernel version, in a Kbuild file."""
    changes: list[Change] = []
    lines = text.split("\n")
    out: list[str] = []
    defined = NS_STRINGS_VAR + " :=" in text
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("#") or "$(" + NS_STRINGS_VAR in line:
            out.append(line)
            continue

        def both(m: re.Match[str]) -> str:
            name = m.group(2) or m.group(3) or m.group(4)
            changes.append(Change(path, n, f"-DDEFAULT_SYMBOL_NAMESPACE="
                                  f"{m.group(1)}: by kernel version"))
            return (f"-DDEFAULT_SYMBOL_NAMESPACE=$(if $({NS_STRINGS_VAR}),"
                    f"'\"{name}\"',{name})")

        new = DEFAULT_NS_MAKE.sub(both, line)
        if new != line and not defined:
            out += NS_STRINGS_DEF.rstrip("\n").split("\n")
            defined = True
        out.append(new)
    return "\n".join(out), changes


def convert_file(root: Path, rel: str, table: dict[str, int]) -> Result:
    text = (root / rel).read_text(errors="surrogateescape")
    if C_FILE.search(rel):
        new, changes = convert_c(rel, text, table)
    else:
        new, changes = convert_kbuild(rel, text)
    return Result(rel, text, new, changes)


def source_files(root: Path) -> list[str]:
    """The C files and Kbuild files under root, sorted; .git skipped."""
    if not root.is_dir():
        raise ToolError(f"{root}: not a directory")
    found = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and ".git" not in p.relative_to(root).parts and \
                (C_FILE.search(rel) or KBUILD_FILE.search(rel)):
            found.append(rel)
    return found


def convert_dir(root: Path, table: dict[str, int] | None = None
                ) -> list[Result]:
    """Every file of root that mentions a namespace, converted."""
    table = load_table() if table is None else table
    results = []
    for rel in source_files(root):
        r = convert_file(root, rel, table)
        if r.changes or r.new != r.old:
            results.append(r)
    return results


def write(root: Path, results: Iterable[Result]) -> None:
    for r in results:
        if r.new != r.old:
            (root / r.path).write_text(r.new, errors="surrogateescape")
