"""Find the macros that take a symbol namespace, by reading the tree's #defines.

Two kinds matter:

* string macros take the namespace as a C string: __EXPORT_SYMBOL() and every
  macro that passes one of its parameters on to a string slot;
* identifier macros take a bare identifier and stringify it (#ns or
  __stringify(ns)) into a string slot -- EXPORT_SYMBOL_NS() and friends -- or
  pass a parameter on to another identifier macro (the PM-ops wrappers, local
  wrappers in drivers).

The conversion quotes the namespace at every call of an identifier macro and
makes the stringifying definitions ("roots") pass the parameter through.
Nothing here knows the kernel's macro names except the two string sinks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

# Where a namespace string ends up: the third argument of __EXPORT_SYMBOL()
# and the second of MODULE_INFO(import_ns, ...).
STRING_SINKS: dict[str, int] = {"__EXPORT_SYMBOL": 2}
MODINFO_IMPORT = ("MODULE_INFO", "import_ns")

DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)(.*)$")
CALL_RE = re.compile(r"\b(\w+)\s*\(")
IDENT_RE = re.compile(r"[A-Za-z_]\w*\Z")


@dataclass(frozen=True)
class Define:
    """One function-like #define: where it is, its parameters and its body."""
    path: str
    line: int            # 1-based line of the '#define'
    last_line: int       # 1-based line where the body ends
    name: str
    params: tuple[str, ...]
    body: str            # continuation lines joined, comments kept


@dataclass
class NsMacros:
    """The result of discovery."""
    ident: dict[str, int] = field(default_factory=dict)   # name -> ns index
    string: dict[str, int] = field(default_factory=dict)
    roots: list[tuple[Define, str]] = field(default_factory=list)

    def names(self) -> list[str]:
        return sorted(self.ident)


def split_args(text: str, start: int) -> tuple[list[str], int] | None:
    """Split the argument list that opens at text[start] == '('.

    Returns the stripped arguments and the index just past the closing
    parenthesis, or None when the parentheses do not balance.
    """
    depth = 0
    args: list[str] = []
    cur: list[str] = []
    i = start
    quote = ""
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
            cur.append(c)
        elif c == "(":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i + 1
            cur.append(c)
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    return None


def calls(text: str) -> Iterator[tuple[str, list[str], int]]:
    """Yield (name, arguments, offset) for every NAME(...) in text."""
    for m in CALL_RE.finditer(text):
        split = split_args(text, m.end() - 1)
        if split is not None:
            yield m.group(1), split[0], m.start()


def clean_arg(arg: str) -> str:
    """An argument without line continuations and comments."""
    arg = re.sub(r"/\*.*?\*/", " ", arg.replace("\\\n", " "), flags=re.S)
    return " ".join(arg.split())


def defines(path: str, text: str) -> Iterator[Define]:
    """Yield the function-like #defines of one file."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = DEFINE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        first = i
        body = [m.group(3)]
        while lines[i].endswith("\\") and i + 1 < len(lines):
            i += 1
            body.append(lines[i])
        params = tuple(p.strip() for p in m.group(2).split(",") if p.strip())
        yield Define(path, first + 1, i + 1, m.group(1), params,
                     "\n".join(body))
        i += 1


def _stringified(arg: str, params: tuple[str, ...]) -> str | None:
    m = re.fullmatch(r"#\s*(\w+)|__stringify\(\s*(\w+)\s*\)", arg)
    if m:
        p = m.group(1) or m.group(2)
        if p in params:
            return p
    return None


def pass_through(defs: Iterable[Define]) -> set[str]:
    """Macros that pass their one argument on as it is, or after "" (which
    makes the compiler check that it is a string literal)."""
    found = set()
    for d in defs:
        if len(d.params) == 1 and re.fullmatch(
                rf'(?:""\s*)?{re.escape(d.params[0])}', clean_arg(d.body)):
            found.add(d.name)
    return found


def unwrap(arg: str, through: set[str]) -> str:
    """arg without the pass-through macros around it."""
    while True:
        m = re.fullmatch(r"(\w+)\s*\((.*)\)", arg, re.S)
        if m is None or m.group(1) not in through:
            return arg
        arg = m.group(2).strip()


def discover(files: Iterable[tuple[str, str]]) -> NsMacros:
    """Find namespace macros in (path, text) pairs, to a fixed point."""
    return discover_defines(d for path, text in files
                            for d in defines(path, text))


def discover_defines(all_defs: Iterable[Define],
                     known: dict[str, int] | None = None) -> NsMacros:
    """Find namespace macros among #defines, to a fixed point; known are
    identifier macros defined elsewhere (NAME -> namespace position)."""
    defs = list(all_defs)
    through = pass_through(defs)
    found = NsMacros(ident=dict(known or {}), string=dict(STRING_SINKS))
    changed = True
    while changed:
        changed = False
        for d in defs:
            for name, args, _ in calls(d.body):
                args = [clean_arg(a) for a in args]
                slot = None
                if name in found.string:
                    slot = found.string[name]
                elif (name, args[0] if args else "") == MODINFO_IMPORT:
                    slot = 1
                if slot is not None and slot < len(args):
                    arg = unwrap(args[slot], through)
                    if arg in d.params and d.name not in found.string:
                        found.string[d.name] = d.params.index(arg)
                        changed = True
                    p = _stringified(arg, d.params)
                    if p is not None:
                        if (d, p) not in found.roots:
                            found.roots.append((d, p))
                        if d.name not in found.ident:
                            found.ident[d.name] = d.params.index(p)
                            changed = True
                if name in found.ident and found.ident[name] < len(args):
                    arg = args[found.ident[name]]
                    if arg in d.params and d.name not in found.ident:
                        found.ident[d.name] = d.params.index(arg)
                        changed = True
    for name in list(found.ident):
        found.string.pop(name, None)
    return found


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="surrogateescape")
