"""Find the namespace arguments of namespace-macro calls in any text.

The same scanner feeds the text step (which quotes what spatch could not
reach: comments, documentation, code spatch failed to parse) and the
completeness check (which must then find nothing bare).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Iterator

from .macros import IDENT_RE, clean_arg, defines, split_args


class Kind(Enum):
    STRING = "string"           # already "FOO": nothing to do
    PASS_THROUGH = "pass"       # a macro parameter: must stay bare
    BARE = "bare"               # FOO: must become "FOO"
    OTHER = "other"             # empty, ..., an expression: not a namespace
    QUOTED_PARAM = "quoted parameter"   # "ns" where ns is a parameter: wrong


@dataclass(frozen=True)
class Site:
    path: str
    line: int                   # 1-based line of the namespace argument
    macro: str
    arg: str
    kind: Kind
    start: int                  # offsets of the argument text in the file
    end: int


def _define_spans(path: str, text: str) -> list[tuple[int, int, tuple[str, ...], str]]:
    """(start, end, params, name) offsets of every function-like #define."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    spans = []
    for d in defines(path, text):
        spans.append((starts[d.line - 1], starts[d.last_line], d.params, d.name))
    return spans


def find_sites(path: str, text: str, ns_macros: dict[str, int]) -> Iterator[Site]:
    """Yield every call of a namespace macro in text with its last argument."""
    if not ns_macros:
        return
    pattern = re.compile(r"\b(%s)\s*\(" % "|".join(
        re.escape(n) for n in sorted(ns_macros, key=len, reverse=True)))
    spans: list[tuple[int, int, tuple[str, ...], str]] | None = None
    for m in pattern.finditer(text):
        # The definition's own head, '#define NAME(params)', is no call.
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.match(r"[ \t]*#[ \t]*define[ \t]+$", text[line_start:m.start()]):
            continue
        split = split_args(text, m.end() - 1)
        if split is None or not split[0]:
            continue
        args, close = split
        if len(args) != ns_macros[m.group(1)] + 1:
            continue
        # Offsets of the last argument: after the last top-level comma.
        inner_end = close - 1
        depth, quote = 0, ""
        arg_start = m.end()
        for j in range(m.end(), inner_end):
            c = text[j]
            if quote:
                if c == quote and text[j - 1] != "\\":
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "," and depth == 0:
                arg_start = j + 1
        raw = text[arg_start:inner_end]
        arg = clean_arg(raw)
        lead = len(raw) - len(raw.lstrip(" \t\\\n"))
        start = arg_start + lead
        end = start + len(arg) if IDENT_RE.match(arg) or arg.startswith('"') else inner_end
        if spans is None:
            spans = _define_spans(path, text)
        params_here = [p for s, e, p, _ in spans if s <= m.start() < e]
        params = params_here[0] if params_here else ()
        if arg.startswith('"'):
            kind = Kind.QUOTED_PARAM if arg.strip('"') in params else Kind.STRING
        elif IDENT_RE.match(arg):
            kind = Kind.PASS_THROUGH if arg in params else Kind.BARE
        else:
            kind = Kind.OTHER
        if kind is Kind.BARE and text[start:end] != arg:
            kind = Kind.OTHER   # the argument is split by comments: leave it
        yield Site(path, text.count("\n", 0, start) + 1, m.group(1), arg,
                   kind, start, end)


def quote_sites(text: str, sites: Iterable[Site]) -> str:
    """Return text with every bare site's identifier put in quotes."""
    out = []
    pos = 0
    for s in sorted(sites, key=lambda s: s.start):
        if s.kind is not Kind.BARE:
            continue
        out.append(text[pos:s.start])
        out.append('"%s"' % s.arg)
        pos = s.end
    out.append(text[pos:])
    return "".join(out)
