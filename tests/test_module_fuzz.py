"""generate.py module on random module sources (fixed seeds, so a failure
is replayed by its seed).

Each source mixes real-looking module code, block and line comments,
string literals (escapes, '//', line continuations, namespace-macro text
inside), character literals and namespace-macro calls (bare and quoted,
split over lines, with comments inside, in #defines and wrappers,
unbalanced).  The converter's output is read back by a small C tokenizer
written here, independent of nsgen/module.py's, and must be the input:
each of its two branches, the inserted '#if LINUX_VERSION_CODE ...',
'#else', '#endif' and '#include <linux/version.h>' lines taken out, is
the input's token stream with every namespace argument quoted (from
6.13 on) or bare (before), strings, character literals and other code
untouched, comments the same but for quoted prose.  A second run changes
nothing, and every unbalanced call, and only those, is warned about.
"""

from __future__ import annotations

import functools
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen import module  # noqa: E402

SEEDS = range(300)
NAMESPACES = ["NS_A", "NS_B", "DMA_BUF", "CXL", "USB_STORAGE"]
OURS_IF = "# if LINUX_VERSION_CODE > = KERNEL_VERSION ( 6 , 13 , 0 )"
VERSION_H = "# include < linux / version . h >"


# The test's own C tokenizer: continuations joined first, then a plain
# character loop (the converter uses regular expressions instead).

@dataclass(frozen=True)
class Tok:
    kind: str       # ident, number, string, char, punct, comment, newline
    text: str


def c_tokens(text: str) -> list[Tok]:
    s = text.replace("\\\n", "")
    out: list[Tok] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\n":
            out.append(Tok("newline", c))
            i += 1
        elif c in " \t":
            i += 1
        elif s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(Tok("comment", s[i:j]))
            i = j
        elif s.startswith("//", i):
            j = s.find("\n", i)
            j = n if j < 0 else j
            out.append(Tok("comment", s[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and s[j] not in (c, "\n"):
                j += 2 if s[j] == "\\" else 1
            out.append(Tok("string" if c == '"' else "char", s[i:j + 1]))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (s[j].isalnum() or s[j] == "_"):
                j += 1
            out.append(Tok("ident", s[i:j]))
            i = j
        elif c.isdigit():
            j = i
            while j < n and s[j].isalnum():
                j += 1
            out.append(Tok("number", s[i:j]))
            i = j
        else:
            out.append(Tok("punct", c))
            i += 1
    return out


def logical_lines(toks: list[Tok]) -> list[list[Tok]]:
    lines: list[list[Tok]] = [[]]
    for t in toks:
        lines[-1].append(t)
        if t.kind == "newline":
            lines.append([])
    return lines


def directive(line: list[Tok]) -> str | None:
    """A preprocessor line's tokens (comments left out), or None."""
    code = [t.text for t in line if t.kind not in ("comment", "newline")]
    return " ".join(code) if code and code[0] == "#" else None


def branch(text: str, new: bool) -> list[Tok]:
    """The output's tokens as the compiler sees them on a kernel from
    6.13 on (new) or before: the converter's #if/#else/#endif and its
    #include <linux/version.h> taken out."""
    out: list[Tok] = []
    stack: list[list[bool] | None] = []    # ours: [in its #else]
    for line in logical_lines(c_tokens(text)):
        d = directive(line)
        if d == OURS_IF:
            stack.append([False])
            continue
        if d == VERSION_H:
            continue
        top = stack[-1] if stack else None
        if d is not None and top is not None and d == "# else":
            assert not top[0], "two #else"
            top[0] = True
            continue
        if d is not None and d == "# endif" and top is not None:
            stack.pop()
            continue
        if d is not None and re.match(r"# (if|ifdef|ifndef)\b", d):
            stack.append(None)
        elif d == "# endif":
            stack.pop()
        if all(s is None or s[0] != new for s in stack):
            out += line
    assert not stack, "a conditional is not closed"
    return out


# The random module sources.

@dataclass
class Case:
    seed: int
    text: str
    unbalanced: int          # calls in code that do not close


class Writer:
    """Builds one random module source."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.unbalanced = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def ns(self) -> str:
        return self.rng.choice(NAMESPACES)

    def arg(self) -> str:
        ns = self.ns()
        return f'"{ns}"' if self.rng.random() < 0.3 else ns

    def call_text(self, macro: str, sym: str) -> str:
        """A namespace call, spelled one of the ways people write it."""
        r = self.rng
        arg = self.arg()
        first = f"{sym}," if macro != "MODULE_IMPORT_NS" else ""
        sep = r.choice(["", " ", "\n\t", "\n\t\t     ", " /* ns */ ",
                        "\n\t/* the namespace */\n\t"])
        if first:
            sep = r.choice([" ", "\n\t\t", " /* ns: */ ", sep])
        paren = r.choice(["(", "(", " (", "(\n\t"]) if not first else "("
        tail = r.choice(["", "", " /* after */", " // after",
                         " // prose: MODULE_IMPORT_NS(%s)" % self.ns()])
        return f"{macro}{paren}{first}{sep}{arg});{tail}"

    def prose(self) -> str:
        r = self.rng
        return r.choice([
            f"MODULE_IMPORT_NS({self.ns()})",
            f"EXPORT_SYMBOL_NS_GPL(sym, {self.ns()})",
            f'MODULE_IMPORT_NS("{self.ns()}")',
            "don't", 'a "quote', "a // slash", "a /* nested", "'('",
            "the namespace", "see below", "x = f(y);", "a \\ b", "*",
        ])

    def string(self) -> str:
        r = self.rng
        parts = [r.choice([
            "needs ", f"MODULE_IMPORT_NS({self.ns()})",
            f"EXPORT_SYMBOL_NS(f, {self.ns()})", "\\\"", "\\\\", "\\n",
            "//", "/*", "*/", "'", "(", ")", ", ", "\\'", "%d",
            "\\\n", "http://example.org/",
        ]) for _ in range(r.randint(1, 6))]
        return '"' + "".join(parts) + '"'

    def unit(self, depth: int = 0) -> str:
        r = self.rng
        kind = r.choice([
            "include", "code", "function", "block", "line", "string",
            "char", "call", "call", "call", "mixed", "define", "wrapper",
            "pass", "unbalanced", "ifdef", "blank",
        ])
        if kind == "ifdef" and depth > 1:
            kind = "call"
        if kind == "include":
            return r.choice(["#include <linux/module.h>",
                             '#include "local.h"',
                             "#include <linux/export.h>"])
        if kind == "code":
            return f"static int {self.name('v')} = {r.randint(0, 99)};"
        if kind == "function":
            f = self.name("f")
            return (f"static int __init {f}(void)\n{{\n\treturn 0;\n}}\n"
                    f"module_init({f});")
        if kind == "block":
            words = [self.prose() for _ in range(r.randint(1, 4))]
            if r.random() < 0.5:
                return "/* " + " ".join(words) + " */"
            return "/*\n" + "".join(f" * {w}\n" for w in words) + " */"
        if kind == "line":
            text = "// " + " ".join(self.prose()
                                   for _ in range(r.randint(1, 3)))
            if r.random() < 0.3:    # continued: the next line is comment
                text += " \\\n   " + self.prose()
            return text
        if kind == "string":
            return f"static const char *{self.name('s')} = {self.string()};"
        if kind == "char":
            c = r.choice(["'\"'", "'\\''", "'('", "')'", "'/'", "'\\\\'",
                          "','", "'*'"])
            return f"static const char {self.name('c')} = {c};"
        if kind == "call":
            macro = r.choice(["MODULE_IMPORT_NS", "EXPORT_SYMBOL_NS",
                              "EXPORT_SYMBOL_NS_GPL"])
            return self.call_text(macro, self.name("sym"))
        if kind == "mixed":
            before = r.choice(['MODULE_LICENSE("GPL");',
                               "static char q = '\"';",
                               f"static const char *m = {self.string()};"])
            return f"{before} {self.call_text('MODULE_IMPORT_NS', '')}"
        if kind == "define":
            if r.random() < 0.5:
                return (f"#define {self.name('IMPORT')} "
                        f"MODULE_IMPORT_NS({self.arg()})")
            w = self.name("EXPORT")
            return (f"#define {w}(s) \\\n\tEXPORT_SYMBOL_NS_GPL(s, \\\n"
                    f"\t\t{self.arg()})\n{w}({self.name('sym')});")
        if kind == "wrapper":
            w = self.name("MY_EXPORT")
            return (f"#define {w}(s, ns) EXPORT_SYMBOL_NS_GPL(s, ns)\n"
                    f"{w}({self.name('sym')}, {self.arg()});")
        if kind == "pass":
            w = self.name("PASS")
            return f"#define {w}(ns) MODULE_IMPORT_NS(ns) /* ns: bare */"
        if kind == "unbalanced":
            self.unbalanced += 1
            if r.random() < 0.5:
                return f"MODULE_IMPORT_NS({self.name('BAD')};"
            return (f"#define {self.name('BROKEN')} "
                    f"EXPORT_SYMBOL_NS(f, {self.name('BAD')}")
        if kind == "ifdef":
            body = "\n".join(self.unit(depth + 1)
                             for _ in range(r.randint(1, 3)))
            return f"#ifdef {self.name('CONFIG')}\n{body}\n#endif"
        return ""


@functools.lru_cache(maxsize=None)
def case(seed: int) -> Case:
    w = Writer(seed)
    units = ["// SPDX-License-Identifier: GPL-2.0"]
    units += [w.unit() for _ in range(w.rng.randint(3, 14))]
    return Case(seed, "\n".join(units) + "\n", w.unbalanced)


@functools.lru_cache(maxsize=None)
def converted(seed: int) -> tuple[str, tuple[module.Change, ...]]:
    new, changes = module.convert_c("fuzz.c", case(seed).text,
                                    module.load_table())
    return new, tuple(changes)


def unquoted(comment: str) -> str:
    return re.sub(r'"(%s)"' % "|".join(NAMESPACES), r"\1", comment)


def same_but_namespaces(old: list[Tok], new: list[Tok], quoted: bool
                        ) -> str | None:
    """Why new is not old with each namespace spelled as asked."""
    if len(old) != len(new):
        return f"{len(old)} tokens became {len(new)}"
    for a, b in zip(old, new):
        if a == b and not (a.kind == "ident" and a.text in NAMESPACES
                           or a.kind == "string"
                           and a.text.strip('"') in NAMESPACES):
            continue
        if a.kind == "comment" == b.kind:
            if unquoted(a.text) != unquoted(b.text):
                return f"comment {a.text!r} became {b.text!r}"
            continue
        name = a.text.strip('"')
        want = f'"{name}"' if quoted else name
        if name not in NAMESPACES or a.kind not in ("ident", "string") \
                or b.text != want:
            return f"{a.text!r} became {b.text!r}, not {want!r}"
    return None


@pytest.mark.parametrize("chunk", range(6))
def test_branches_are_the_input(chunk: int) -> None:
    """Each branch of the output is the input's token stream, namespaces
    spelled for that branch's kernels."""
    for seed in SEEDS[chunk::6]:
        new, _ = converted(seed)
        old = c_tokens(case(seed).text)
        for quoted in (True, False):
            why = same_but_namespaces(old, branch(new, quoted), quoted)
            assert why is None, (f"seed {seed}, "
                                 f"{'6.13' if quoted else 'older'} branch: "
                                 f"{why}\n--- input:\n{case(seed).text}"
                                 f"--- output:\n{new}")


@pytest.mark.parametrize("chunk", range(6))
def test_prose_is_quoted_and_strings_kept(chunk: int) -> None:
    """Comments' calls are quoted; string literals are kept to the byte
    (their count and text, in each branch)."""
    bare = re.compile(r"MODULE_IMPORT_NS\((%s)\)" % "|".join(NAMESPACES))
    for seed in SEEDS[chunk::6]:
        new, _ = converted(seed)
        old = c_tokens(case(seed).text)
        for quoted in (True, False):
            toks = branch(new, quoted)
            assert [t for t in toks if t.kind in ("string", "char")
                    and t.text.strip('"') not in NAMESPACES] == \
                [t for t in old if t.kind in ("string", "char")
                 and t.text.strip('"') not in NAMESPACES], f"seed {seed}"
            assert not any(bare.search(t.text) for t in toks
                           if t.kind == "comment"), f"seed {seed}"


@pytest.mark.parametrize("chunk", range(6))
def test_second_run_changes_nothing(chunk: int) -> None:
    for seed in SEEDS[chunk::6]:
        new, _ = converted(seed)
        again, _ = module.convert_c("fuzz.c", new, module.load_table())
        assert again == new, f"seed {seed}\n--- first:\n{new}"


@pytest.mark.parametrize("chunk", range(6))
def test_warned_about_unbalanced_calls_only(chunk: int) -> None:
    for seed in SEEDS[chunk::6]:
        _, changes = converted(seed)
        warnings = [str(c) for c in changes if c.warning]
        assert len(warnings) == case(seed).unbalanced, \
            f"seed {seed}: {warnings}\n{case(seed).text}"
        assert all("no closing parenthesis" in w for w in warnings), \
            f"seed {seed}: {warnings}"


def test_the_cases_cover_the_shapes() -> None:
    """The generator is not vacuous: across the seeds there are
    conversions, warnings, macro text in strings and continued lines."""
    texts = [case(s).text for s in SEEDS]
    assert sum(case(s).unbalanced for s in SEEDS) > 50
    assert sum(len([c for c in converted(s)[1] if not c.warning])
               for s in SEEDS) > 1000
    assert sum(bool(re.search(r'"[^"\n]*MODULE_IMPORT_NS\(', t))
               for t in texts) > 50
    assert sum("\\\n" in t for t in texts) > 100
    assert sum("'\"'" in t for t in texts) > 30
    assert sum("#ifdef" in t for t in texts) > 100
