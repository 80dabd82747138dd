"""The parts of the conversion that Coccinelle cannot express.

* The stringifying definitions (#ns, __stringify(ns)) pass the namespace on.
* Namespace arguments spatch did not reach are quoted from the scanner's
  sites: prose in comments, documentation, Kconfig help, and code spatch
  could not parse (each one is reported).
* Scripts that write or parse the macro syntax are changed by the rules of
  cocci/scripts.rules; a script that mentions a namespace macro and has no
  rule stops the run, so a new kernel's new script is never missed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .macros import Define, read_text
from .run import ToolError
from .sites import Kind, Site, find_sites, quote_sites

# Files the scanner may quote: C, headers, documentation, Kconfig.
PROSE_OR_C = re.compile(r"(\.(c|h|rst|txt)|(^|/)Kconfig[^/]*)$")


@dataclass(frozen=True)
class ScriptRule:
    """One edit of one script: replace a regex, expecting exactly count hits.

    A rule with an empty pattern records that the file mentions the macros
    but needs no edit, and why.
    """
    path: str
    pattern: str
    replacement: str
    count: int
    why: str


def load_rules(path: Path) -> list[ScriptRule]:
    """Read cocci/scripts.rules: blocks of 'key: value' lines, blank-separated."""
    rules: list[ScriptRule] = []
    for block in re.split(r"\n\s*\n", path.read_text()):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise ToolError(f"{path}: bad line {line!r}")
            fields[key.strip()] = value.strip()
        if not fields:
            continue
        try:
            rules.append(ScriptRule(fields["file"], fields.get("find", ""),
                                    fields.get("replace", ""),
                                    int(fields.get("count", "0")),
                                    fields["why"]))
        except (KeyError, ValueError) as e:
            raise ToolError(f"{path}: incomplete rule {fields}: {e}") from None
    return rules


def unstringify(root: Path, roots: Iterable[tuple[Define, str]]) -> list[str]:
    """Make each stringifying definition pass its namespace parameter on."""
    touched: list[str] = []
    by_file: dict[str, list[tuple[Define, str]]] = {}
    for d, p in roots:
        by_file.setdefault(d.path, []).append((d, p))
    for path, items in sorted(by_file.items()):
        lines = read_text(root / path).split("\n")
        for d, p in items:
            for i in range(d.line - 1, d.last_line):
                new = re.sub(rf"__stringify\(\s*{p}\s*\)", p, lines[i])
                new = re.sub(rf"(?<![#\w])#\s*{p}\b", p, new)
                lines[i] = new
        (root / path).write_text("\n".join(lines), encoding="utf-8",
                                 errors="surrogateescape")
        touched.append(path)
    return touched


def quote_leftovers(root: Path, files: Iterable[str],
                    ns_macros: dict[str, int]) -> list[Site]:
    """Quote every bare namespace left in C, headers and docs; return them."""
    done: list[Site] = []
    for path in sorted(files):
        if not PROSE_OR_C.search(path):
            continue
        text = read_text(root / path)
        bare = [s for s in find_sites(path, text, ns_macros)
                if s.kind is Kind.BARE]
        if bare:
            (root / path).write_text(quote_sites(text, bare), encoding="utf-8",
                                     errors="surrogateescape")
            done.extend(bare)
    return done


def apply_script_rules(root: Path, files: Iterable[str],
                       rules: list[ScriptRule]) -> list[str]:
    """Apply the script rules; fail on a script no rule covers."""
    covered = {r.path for r in rules}
    scripts = sorted(f for f in files if not PROSE_OR_C.search(f))
    uncovered = [f for f in scripts if f not in covered]
    if uncovered:
        raise ToolError(f"{uncovered[0]} mentions a namespace macro but "
                        "cocci/scripts.rules has no rule for it; add one")
    touched: list[str] = []
    mentioned = set(files)
    for r in rules:
        # A rule for a script that does not mention the macros in this
        # tree (an older kernel-doc that ignores namespaces, or one that
        # moved) has nothing to do here.
        if r.path not in mentioned or not r.pattern:
            continue
        prose = bool(PROSE_OR_C.search(r.path))
        replacement = r.replacement.replace("\\n", "\n") if prose \
            else r.replacement
        target = root / r.path
        text = read_text(target)
        new, n = re.subn(r.pattern, lambda _m: replacement, text)
        if n == 0 and (prose or replacement in text):
            # already converted; or prose this tree words otherwise
            continue
        if n != r.count:
            raise ToolError(f"cocci/scripts.rules: {r.path}: expected "
                            f"{r.count} match(es) of {r.pattern!r}, found "
                            f"{n}; the script changed, update the rule")
        target.write_text(new, encoding="utf-8", errors="surrogateescape")
        touched.append(r.path)
    return touched


# DEFAULT_SYMBOL_NAMESPACE names the namespace of a whole file or
# directory.  Older trees (6.1) spell it bare and export.h stringifies it;
# newer ones (Debian's 6.12, 6.13 on) write a string, in C and in Makefiles
# (-DDEFAULT_SYMBOL_NAMESPACE='"FOO"').
DEFAULT_NS = "DEFAULT_SYMBOL_NAMESPACE"
DEFAULT_NS_STRINGIFY = re.compile(rf"__stringify\(\s*{DEFAULT_NS}\s*\)")
DEFAULT_NS_DEFINE = re.compile(
    rf"^([ \t]*#[ \t]*define[ \t]+{DEFAULT_NS}[ \t]+)([A-Za-z_]\w*)([ \t]*(/[*/].*)?)$",
    re.M)
DEFAULT_NS_FLAG = re.compile(rf"(-D{DEFAULT_NS}=)([A-Za-z_]\w*)\b(?!['\"])")
MAKEFILE = re.compile(r"(^|/)(Makefile|Kbuild)[^/]*$")


@dataclass(frozen=True)
class DefaultNsEdit:
    path: str
    line: int
    what: str       # 'definition', 'define' or 'flag'


def _default_ns_edits(path: str, text: str) -> tuple[str, list[DefaultNsEdit]]:
    """Quote the DEFAULT_SYMBOL_NAMESPACE values of one file's text."""
    edits: list[DefaultNsEdit] = []

    def at(m: re.Match[str]) -> int:
        return text.count("\n", 0, m.start()) + 1

    def define(m: re.Match[str]) -> str:
        edits.append(DefaultNsEdit(path, at(m), "define"))
        return f'{m.group(1)}"{m.group(2)}"{m.group(3)}'

    def flag(m: re.Match[str]) -> str:
        edits.append(DefaultNsEdit(path, at(m), "flag"))
        return f"{m.group(1)}'\"{m.group(2)}\"'"

    def stringify(m: re.Match[str]) -> str:
        edits.append(DefaultNsEdit(path, at(m), "definition"))
        return DEFAULT_NS

    new = DEFAULT_NS_STRINGIFY.sub(stringify, text) \
        if path.endswith(".h") else text
    if path.endswith((".c", ".h", ".rst", ".txt")):
        new = DEFAULT_NS_DEFINE.sub(define, new)
    if MAKEFILE.search(path) or path.endswith((".rst", ".txt")):
        new = DEFAULT_NS_FLAG.sub(flag, new)
    return new, edits


def quote_default_namespace(root: Path,
                            files: Iterable[str]) -> list[DefaultNsEdit]:
    """Make DEFAULT_SYMBOL_NAMESPACE a string where it is still bare: its
    #defines and -D flags get quotes, export.h stops stringifying it."""
    done: list[DefaultNsEdit] = []
    for path in sorted(files):
        text = read_text(root / path)
        new, edits = _default_ns_edits(path, text)
        if edits:
            (root / path).write_text(new, encoding="utf-8",
                                     errors="surrogateescape")
            done.extend(edits)
    return done


def bare_default_namespaces(root: Path, files: Iterable[str]) -> list[str]:
    """Every DEFAULT_SYMBOL_NAMESPACE still bare, as 'file:line: why'."""
    left = []
    for path in sorted(files):
        _, edits = _default_ns_edits(path, read_text(root / path))
        left.extend(f"{e.path}:{e.line}: {DEFAULT_NS} {e.what} is bare"
                    for e in edits)
    return left
