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
tree; string and character literals are data and never touched.  A call
the converter cannot read (no closing parenthesis, the wrong number of
arguments, a namespace that is neither an identifier nor a string) is
left as it is with a warning.  DEFAULT_SYMBOL_NAMESPACE gets the same
treatment in C (#define) and in Kbuild files (-DDEFAULT_SYMBOL_NAMESPACE=),
under a 6.12 test: Debian's 6.12 takes it as a string already.  (A 6.12.y
older than the stable update that made it a string is not covered: it
would need the bare spelling.)

Every decision about a C file reads one lexer pass over it (lex() and
CSource): line continuations joined first, as the compiler does, then
comments, string and character literals, identifiers, preprocessor lines.
--in-place (write()) rewrites all the files or none.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Iterable

from .macros import IDENT_RE, Define, discover_defines
from .run import ToolError
from .sites import Kind

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
CONDITIONALS = ("if", "ifdef", "ifndef", "elif", "else", "endif")
STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
VERSION_H_NAME = re.compile(r'[<"]\s*linux/version\.h\s*[>"]')
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


class Tok(Enum):
    """What the lexer tells apart (C's preprocessing tokens, plus layout)."""
    IDENT = "identifier"
    NUMBER = "number"
    STRING = "string literal"
    CHAR = "character literal"
    PUNCT = "punctuator"
    COMMENT = "comment"
    SPACE = "space"
    NEWLINE = "newline"


@dataclass(frozen=True)
class Token:
    kind: Tok
    text: str        # as the compiler reads it: line continuations joined
    start: int       # offsets in the file (continuations included)
    end: int


LAYOUT = (Tok.COMMENT, Tok.SPACE, Tok.NEWLINE)
SPLICE = re.compile(r"\\\r?\n")
TOKEN = re.compile(
    r"(?P<COMMENT>/\*.*?(?:\*/|\Z)|//[^\n]*)"
    r'|(?P<STRING>"(?:[^"\\\n]|\\.)*"?)'
    r"|(?P<CHAR>'(?:[^'\\\n]|\\.)*'?)"
    r"|(?P<IDENT>[A-Za-z_]\w*)"
    r"|(?P<NUMBER>\.?\d(?:[eEpP][+-]|[\w.])*)"
    r"|(?P<NEWLINE>\n)"
    r"|(?P<SPACE>[^\S\n]+)"
    r"|(?P<PUNCT>.)", re.S)


def lex(text: str) -> list[Token]:
    """The tokens of a C file, comments and layout included, as the
    compiler's first translation phases see them: line continuations
    (backslash-newline) are joined first, wherever they are, then
    comments, string and character literals are told from code.  An
    unterminated literal ends at its line's end, an unterminated comment
    at the file's end."""
    joined_at = [0]      # where each continuation-free piece starts
    file_at = [0]        # the same in the file
    removed = 0
    for m in SPLICE.finditer(text):
        removed += m.end() - m.start()
        joined_at.append(m.end() - removed)
        file_at.append(m.end())
    joined = SPLICE.sub("", text) if removed else text

    def at(i: int) -> int:
        k = bisect.bisect_right(joined_at, i) - 1
        return file_at[k] + i - joined_at[k]

    return [Token(Tok[m.lastgroup or "PUNCT"], m.group(), at(m.start()),
                  at(m.end() - 1) + 1)
            for m in TOKEN.finditer(joined)]


@dataclass(frozen=True)
class Directive:
    """One preprocessor line ('#' first on a line, outside comments)."""
    first: int                  # 0-based lines
    last: int
    keyword: str                # define, if, include, ...
    rest: str                   # after the keyword: comments as spaces
    code: range                 # its tokens in CSource.code, '#' first


@dataclass
class CSource:
    """One C file, lexed once; every decision of the converter reads it."""
    path: str
    text: str
    lines: list[str] = field(init=False)
    starts: list[int] = field(init=False)       # offset of each line
    tokens: list[Token] = field(init=False)
    code: list[Token] = field(init=False)       # no comments, no layout
    home: list[int | None] = field(init=False)  # directive of each code token
    directives: list[Directive] = field(init=False)
    directive_of: dict[int, Directive] = field(init=False)   # by line
    unit: list[tuple[int, int]] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = self.text.split("\n")
        self.starts = list(itertools.accumulate(
            (len(line) + 1 for line in self.lines), initial=0))
        self.tokens = lex(self.text)
        self.code, self.home, self.directives = [], [], []
        self._find_directives()
        self.directive_of = {ln: d for d in self.directives
                             for ln in range(d.first, d.last + 1)}
        self.unit = self._units()

    def line_of(self, offset: int) -> int:
        """0-based line of a file offset."""
        return bisect.bisect_right(self.starts, offset) - 1

    def col_of(self, offset: int) -> tuple[int, int]:
        ln = self.line_of(offset)
        return ln, offset - self.starts[ln]

    def _find_directives(self) -> None:
        line_start = True
        opened: tuple[int, int] | None = None     # first line, first code
        rest: list[str] = []

        def close(last: int) -> None:
            assert opened is not None
            m = re.match(r"(\w*)(.*)", "".join(rest).strip(), re.S)
            assert m is not None
            self.directives.append(Directive(
                opened[0], last, m.group(1), m.group(2).strip(),
                range(opened[1], len(self.code))))

        for t in self.tokens:
            if t.kind is Tok.NEWLINE:
                if opened is not None:
                    close(self.line_of(t.start))
                    opened = None
                line_start = True
                continue
            if t.kind in LAYOUT:
                if opened is not None:
                    rest.append(" ")
                continue
            if line_start and t.kind is Tok.PUNCT and t.text == "#":
                opened, rest = (self.line_of(t.start), len(self.code)), []
            elif opened is not None:
                rest.append(t.text)
            line_start = False
            self.home.append(None if opened is None else len(self.directives))
            self.code.append(t)
        if opened is not None:
            close(self.line_of(self.code[-1].end - 1))

    def _units(self) -> list[tuple[int, int]]:
        """For each line, the lines that must stay with it when a block is
        spelled twice: a line continued by a backslash, a comment over
        several lines, a preprocessor line."""
        reach = list(range(len(self.lines)))
        for i, line in enumerate(self.lines[:-1]):
            if line.endswith("\\") or line.endswith("\\\r"):
                reach[i] = i + 1
        spans = [(self.line_of(t.start), self.line_of(t.end - 1))
                 for t in self.tokens if t.kind is Tok.COMMENT]
        spans += [(d.first, d.last) for d in self.directives]
        for a, b in spans:
            reach[a] = max(reach[a], b)
        unit: list[tuple[int, int]] = []
        first, hi = 0, 0
        for i, r in enumerate(reach):
            if i > hi:
                unit += [(first, hi)] * (i - first)
                first = i
            hi = max(hi, r)
        unit += [(first, hi)] * (len(reach) - first)
        return unit

    def directive_at(self, line: int) -> Directive | None:
        return self.directive_of.get(line)

    def defines(self) -> Iterable[tuple[Define, Directive]]:
        """The #defines: function-like ones with their parameters, object-
        like ones with params () and their body as written."""
        for d in self.directives:
            toks = self.code[d.code.start + 2:d.code.stop]
            if d.keyword != "define" or not toks or \
                    toks[0].kind is not Tok.IDENT:
                continue
            params: list[str] = []
            body = 1
            if len(toks) > 1 and toks[1].text == "(" and not SPLICE.sub(
                    "", self.text[toks[0].end:toks[1].start]):
                cur: list[str] = []
                j = 2
                while j < len(toks) and toks[j].text != ")":
                    if toks[j].text == ",":
                        params.append("".join(cur))
                        cur = []
                    else:
                        cur.append(toks[j].text)
                    j += 1
                if j == len(toks):
                    continue    # no closing parenthesis: not a definition
                if cur or params:
                    params.append("".join(cur))
                body = j + 1
            yield (Define(self.path, d.first + 1, d.last + 1, toks[0].text,
                          tuple(params), spelled(toks[body:], masked=True)),
                   d)

    def args(self, k: int) -> tuple[list[list[Token]], int | None, str]:
        """The arguments of the call whose '(' is code[k], the index of its
        ')', and why that is None.  A call closes within its #define (in
        code, before the next preprocessor line), and before a ';', '{'
        or '}' outside inner parentheses."""
        depth = 0
        args: list[list[Token]] = [[]]
        home = self.home[k]
        for j in range(k, len(self.code)):
            t = self.code[j]
            if self.home[j] != home:
                return args, None, ("before the next preprocessor line"
                                    if home is None else
                                    "before the end of the #define")
            if t.kind is not Tok.PUNCT:
                args[-1].append(t)
            elif t.text == "(":
                depth += 1
                if depth > 1:
                    args[-1].append(t)
            elif t.text == ")":
                depth -= 1
                if depth == 0:
                    return args, j, ""
                args[-1].append(t)
            elif t.text == "," and depth == 1:
                args.append([])
            elif t.text in ";{}" and depth == 1:
                return args, None, f"before '{t.text}'"
            else:
                args[-1].append(t)
        return args, None, "before the end of the file"


def spelled(tokens: Iterable[Token], masked: bool = False) -> str:
    """Tokens as one line of text, a space where the file had layout;
    masked: string and character literals emptied (for scanning)."""
    out: list[str] = []
    prev: Token | None = None
    for t in tokens:
        if prev is not None and t.start > prev.end:
            out.append(" ")
        text = t.text
        if masked and t.kind in (Tok.STRING, Tok.CHAR):
            text = text[0] + " " * max(len(text) - 2, 0) + text[0]
        out.append(text)
        prev = t
    return "".join(out)


def version_guarded_lines(src: CSource, version: tuple[int, int]
                          ) -> set[int]:
    """0-based lines inside a conditional whose #if or #elif tests for
    this kernel version (the author already chose the spelling by it)."""
    test = version_test(version)
    stack: list[bool] = []
    guarded: set[int] = set()
    after = 0
    for d in src.directives:
        if d.keyword not in CONDITIONALS:
            continue
        if any(stack):
            guarded.update(range(after, d.first))
        if d.keyword in ("if", "ifdef", "ifndef"):
            stack.append(bool(test.search(d.rest)))
        elif d.keyword == "elif" and stack:
            stack[-1] = stack[-1] or bool(test.search(d.rest))
        elif d.keyword == "endif" and stack:
            stack.pop()
        after = d.last + 1
    if any(stack):
        guarded.update(range(after, len(src.lines)))
    return guarded


def conditional_chains(src: CSource) -> list[tuple[tuple[int, int], ...]]:
    """For each line, the conditional branches it is in: (index of the
    #if directive, 0 for its first branch, 1 after the first #elif or
    #else, ...), outermost first."""
    chain: list[tuple[int, int]] = []
    per_line: list[tuple[tuple[int, int], ...]] = []
    for i, d in enumerate(src.directives):
        if d.keyword not in CONDITIONALS:
            continue
        per_line += [tuple(chain)] * (d.last + 1 - len(per_line))
        if d.keyword in ("if", "ifdef", "ifndef"):
            chain.append((i, 0))
        elif d.keyword in ("elif", "else") and chain:
            chain[-1] = (chain[-1][0], chain[-1][1] + 1)
        elif d.keyword == "endif" and chain:
            chain.pop()
    per_line += [tuple(chain)] * (len(src.lines) - len(per_line))
    return per_line


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


def _namespace(src: CSource, toks: list[Token], params: Iterable[str]
               ) -> tuple[Kind, Token | None]:
    """What a namespace argument is, and its one token when it is an
    identifier or a string literal (written on one line)."""
    if len(toks) != 1 or src.text[toks[0].start:toks[0].end] != toks[0].text:
        return Kind.OTHER, None
    t = toks[0]
    if t.kind is Tok.IDENT:
        return (Kind.PASS_THROUGH if t.text in params else Kind.BARE), t
    if t.kind is Tok.STRING and STRING_LITERAL.fullmatch(t.text):
        return (Kind.QUOTED_PARAM if t.text[1:-1] in params
                else Kind.STRING), t
    return Kind.OTHER, None


def _prose_args(text: str, i: int) -> list[tuple[int, int]] | None:
    """(start, end) of each argument of the list that opens at
    text[i] == '(', in prose (a comment's text)."""
    depth = 0
    spans = []
    first = i + 1
    for j in range(i, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return spans + [(first, j)]
        elif text[j] == "," and depth == 1:
            spans.append((first, j))
            first = j + 1
    return None


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def convert_c(path: str, text: str, table: dict[str, int]
              ) -> tuple[str, list[Change]]:
    """The portable form of one C file, and what was done."""
    src = CSource(path, text)
    defs = list(src.defines())
    # The module's own macros that pass a namespace on to a known one.
    macros = discover_defines((d for d, _ in defs), table).ident
    takes = {name: (pos + 1, False) for name, pos in table.items()}
    params_of: dict[int, tuple[str, ...]] = {}
    for define, d in defs:
        params_of[d.first] = define.params
        if define.name in macros and define.name not in table:
            takes[define.name] = (len(define.params), bool(
                define.params and define.params[-1].endswith("...")))
    guarded = version_guarded_lines(src, CALLS_FROM)
    default_guarded = version_guarded_lines(src, DEFAULT_FROM)
    changes: list[Change] = []
    blocks: list[Block] = []
    prose: list[Edit] = []

    def left(line: int, what: str) -> None:
        changes.append(Change(path, line + 1, f"{what}; left as it is",
                              warning=True))

    def takes_args(name: str, n: int) -> bool:
        count, variadic = takes[name]
        return macros[name] < n and (
            n == count or variadic and n >= count - 1)

    for k, t in enumerate(src.code[:-1]):
        if t.kind is not Tok.IDENT or t.text not in macros or \
                src.code[k + 1].text != "(":
            continue
        params: tuple[str, ...] = ()
        home = src.home[k]
        if home is not None:
            d = src.directives[home]
            if d.keyword != "define" or k == d.code.start + 2:
                continue    # no code, or the definition's own name
            params = params_of.get(d.first, ())
        ln = src.line_of(t.start)
        args, close, why = src.args(k + 1)
        if close is None:
            shown = _short(f"{t.text}({', '.join(map(spelled, args))}")
            left(ln, f"{shown}: no closing parenthesis {why}: not a call "
                 "this converter can read")
            continue
        if not takes_args(t.text, len(args)):
            if ln not in guarded:
                shown = _short(f"{t.text}({', '.join(map(spelled, args))})")
                left(ln, f"{shown}: {len(args)} argument(s), where "
                     f"{t.text} takes {takes[t.text][0]}")
            continue
        toks = args[macros[t.text]]
        kind, tok = _namespace(src, toks, params)
        arg = spelled(toks)
        at = src.line_of(toks[0].start) if toks else ln
        if kind is Kind.QUOTED_PARAM:
            left(at, f"{t.text}({arg}): the macro parameter is quoted, so "
                 "the namespace is its name")
            continue
        if kind is Kind.PASS_THROUGH or at in guarded:
            continue
        if kind is Kind.OTHER or tok is None:
            left(at, f"{_short(f'{t.text}({arg})')}: the namespace is "
                 "neither an identifier nor a string")
            continue
        name = tok.text.strip('"')
        if kind is Kind.STRING and not IDENT_RE.match(name):
            left(at, f"{t.text}({arg}): not an identifier, so kernels before "
                 "6.13 cannot take it")
            continue
        last = src.line_of(src.code[close].end - 1)
        tl, tc = src.col_of(tok.start)
        end = tc + tok.end - tok.start
        blocks.append(Block(src.unit[ln][0], src.unit[last][1],
                            [(tl, tc, end, f'"{name}"')],
                            [(tl, tc, end, name)], CALLS_FROM))
        changes.append(Change(path, tl + 1, f"{t.text}({arg}): "
                              "spelled both ways, by kernel version"))
    for d in src.directives:
        toks = src.code[d.code.start + 2:d.code.stop]
        if d.keyword != "define" or not toks or \
                toks[0].text != "DEFAULT_SYMBOL_NAMESPACE" or \
                d.first in default_guarded:
            continue
        kind, tok = _namespace(src, toks[1:], ())
        shown = f"DEFAULT_SYMBOL_NAMESPACE {_short(spelled(toks[1:]))}"
        if tok is None or not IDENT_RE.match(tok.text.strip('"')):
            left(d.first, f"{shown}: neither an identifier nor a string "
                 "naming one")
            continue
        name = tok.text.strip('"')
        tl, tc = src.col_of(tok.start)
        end = tc + tok.end - tok.start
        blocks.append(Block(src.unit[d.first][0], src.unit[d.last][1],
                            [(tl, tc, end, f'"{name}"')],
                            [(tl, tc, end, name)], DEFAULT_FROM))
        changes.append(Change(path, tl + 1, f"{shown}: spelled both ways, "
                              "by kernel version"))
    # Prose: a call written in a comment is quoted, as in the tree.
    call = re.compile(r"\b(%s)\s*\(" % "|".join(
        re.escape(n) for n in sorted(macros, key=len, reverse=True)))
    for c in src.tokens:
        if c.kind is not Tok.COMMENT:
            continue
        body = src.text[c.start:c.end]
        inside = src.directive_at(src.line_of(c.start))
        params = params_of.get(inside.first, ()) if inside else ()
        for m in call.finditer(body):
            spans = _prose_args(body, m.end() - 1)
            if spans is None or not takes_args(m.group(1), len(spans)):
                continue
            a, b = spans[macros[m.group(1)]]
            raw = body[a:b]
            arg = raw.strip()
            if not IDENT_RE.match(arg) or arg in params:
                continue
            ln, col = src.col_of(c.start + a + len(raw) - len(raw.lstrip()))
            prose.append((ln, col, col + len(arg), f'"{arg}"'))
            changes.append(Change(path, ln + 1, f"{m.group(1)}({arg}) in a "
                                  "comment: quoted"))
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
    if not merged and not prose:
        return text, changes
    return _write_blocks(src, merged, prose), changes


def _version_h_at(src: CSource, blocks: list[Block]) -> int | None:
    """The line before which #include <linux/version.h> goes (None: the
    file has it already): after the last #include before the first
    block that is in force at every block, else before the first block
    when that one is, else before the file's first line of code."""
    first = blocks[0].first
    includes = [d for d in src.directives if d.keyword == "include"
                and src.unit[d.last][1] < first]
    if any(VERSION_H_NAME.fullmatch(d.rest) for d in includes):
        return None
    chains = conditional_chains(src)
    common = os.path.commonprefix([chains[b.first] for b in blocks])
    at = None
    for d in includes:
        if chains[d.first] == tuple(common[:len(chains[d.first])]):
            at = src.unit[d.last][1] + 1
    if at is not None:
        return at
    if chains[first] == tuple(common):
        return first
    return src.unit[src.line_of(src.code[0].start)][0]


def _write_blocks(src: CSource, blocks: list[Block], prose: list[Edit]
                  ) -> str:
    """The file with each block spelled twice under its version test,
    the prose edits made, and linux/version.h included if need be."""
    crlf = src.text.count("\r\n") * 2 > src.text.count("\n")
    eol = "\r" if crlf else ""
    version_h = _version_h_at(src, blocks) if blocks else None
    by_line: dict[int, list[Edit]] = {}
    for e in prose:
        by_line.setdefault(e[0], []).append(e)
    out: list[str] = []
    ln = 0
    todo = iter(blocks)
    b = next(todo, None)
    while ln < len(src.lines):
        if ln == version_h:
            out.append(VERSION_H + eol)
        if b is not None and b.first == ln:
            inner = [e for e in prose if b.first <= e[0] <= b.last]
            out += [guard(b.since) + eol,
                    _spelled(src.lines, b.first, b.last, b.quoted + inner),
                    "#else" + eol,
                    _spelled(src.lines, b.first, b.last, b.bare + inner),
                    "#endif" + eol]
            ln = b.last + 1
            b = next(todo, None)
        else:
            out.append(_spelled(src.lines, ln, ln, by_line.get(ln, [])))
            ln += 1
    return "\n".join(out)


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
    try:
        text = (root / rel).read_bytes().decode("utf-8", "surrogateescape")
    except OSError as e:
        raise ToolError(f"{root / rel}: cannot read it ({e.strerror})"
                        ) from None
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


REFUSED = ("(no write permission bit; refused even as root), so no file "
           "was rewritten")


def _check_writable(path: Path, real: Path) -> os.stat_result:
    """The file's status, if it and its directory may be rewritten.  A
    file or directory without any write permission bit is refused even
    when root could write it: its author made it read-only."""
    try:
        st = real.stat()
        folder = real.parent.stat()
    except OSError as e:
        raise ToolError(f"{path}: cannot read its status ({e.strerror}), "
                        "so no file was rewritten") from None
    if not st.st_mode & 0o222:
        raise ToolError(f"{path}: read-only {REFUSED}: make it writable "
                        "(chmod u+w) to convert it")
    if not os.access(real, os.W_OK):
        raise ToolError(f"{path}: not writable by this user or on this file "
                        "system, so no file was rewritten")
    beside = "the new files are written beside the old ones first"
    if not folder.st_mode & 0o222:
        raise ToolError(f"{real.parent}: read-only directory {REFUSED}: "
                        f"{beside}")
    if not os.access(real.parent, os.W_OK | os.X_OK):
        raise ToolError(f"{real.parent}: directory not writable by this "
                        "user or on this file system, so no file was "
                        f"rewritten: {beside}")
    return st


def _write_temporary(target: Path, text: str, like: os.stat_result) -> Path:
    """text in a new file beside target, with target's permission bits
    and owner."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                dir=target.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape"))
        made = tmp.stat()
        if (made.st_uid, made.st_gid) != (like.st_uid, like.st_gid):
            os.chown(tmp, like.st_uid, like.st_gid)
        os.chmod(tmp, stat.S_IMODE(like.st_mode))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write(root: Path, results: Iterable[Result]) -> None:
    """Rewrite the changed files, all or none: every file and directory
    is checked first, every new version written to a temporary file
    beside its file (same permission bits, same owner), and only then
    are they renamed over the old ones.  A symbolic link is kept: the
    file it points to is rewritten."""
    todo = []
    for r in results:
        if r.new != r.old:
            path = root / r.path
            real = path.resolve()
            todo.append((path, real, r.new, _check_writable(path, real)))
    temps: list[tuple[Path, Path, Path]] = []
    try:
        for path, real, new, st in todo:
            try:
                temps.append((path, _write_temporary(real, new, st), real))
            except OSError as e:
                raise ToolError(f"{path}: cannot write its new version "
                                f"({e.strerror}), so no file was rewritten"
                                ) from None
    except BaseException:
        for _, tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    for i, (path, tmp, real) in enumerate(temps):
        try:
            os.replace(tmp, real)
        except OSError as e:
            for _, left, _ in temps[i:]:
                left.unlink(missing_ok=True)
            done = ", ".join(str(p) for p, _, _ in temps[:i]) or "none"
            raise ToolError(f"{path}: cannot replace it ({e.strerror}); "
                            f"rewritten before it: {done}") from None
