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

compilable() writes whole modules in the same spellings, ones that gcc
and modpost take without a warning, with what kbuild must make of them
(imports, exports and their namespaces); tests/module_kbuild_check.py
builds a sample of them against the patched kernel.  Here they are only
converted and preprocessed (gcc -E, with the namespace macros defined to
leave a mark), as written and converted, as 6.1, 6.12 and 6.13 see them.
"""

from __future__ import annotations

import functools
import random
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import pytest

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen import module  # noqa: E402
from nsgen.run import run  # noqa: E402

SEEDS = range(300)
NAMESPACES = ["NS_A", "NS_B", "DMA_BUF", "CXL", "USB_STORAGE"]
# The converter's version tests: calls from 6.13 on, DEFAULT_SYMBOL_NAMESPACE
# from 6.12 on.
OURS_IF = {"# if LINUX_VERSION_CODE > = KERNEL_VERSION ( %d , %d , 0 )" % v: v
           for v in (module.CALLS_FROM, module.DEFAULT_FROM)}
VERSION_H = "# include < linux / version . h >"
NEW, OLD = (6, 13), (6, 1)      # kernels: strings only, bare only


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


def branch(text: str, kernel: tuple[int, int]) -> list[Tok]:
    """The output's tokens as the compiler sees them on this kernel
    version: the converter's #if/#else/#endif and its #include
    <linux/version.h> taken out."""
    out: list[Tok] = []
    stack: list[list[bool] | None] = []    # ours: [in its #else, taken]
    for line in logical_lines(c_tokens(text)):
        d = directive(line)
        if d in OURS_IF:
            stack.append([False, kernel >= OURS_IF[d]])
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
        if all(s is None or s[0] != s[1] for s in stack):
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

    # Only what gcc takes without a warning: no '/*' inside a comment, no
    # line comment continued by a backslash, every call closed.
    compilable = False

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

    def call_text(self, macro: str, sym: str, arg: str | None = None,
                  split: bool = False) -> str:
        """A namespace call, spelled one of the ways people write it
        (split: over two lines at least); arg: the namespace as written
        (default: a random one)."""
        r = self.rng
        arg = self.arg() if arg is None else arg
        first = f"{sym}," if sym and macro != "MODULE_IMPORT_NS" else ""
        sep = r.choice(["", " ", "\n\t", "\n\t\t     ", " /* ns */ ",
                        "\n\t/* the namespace */\n\t"])
        if first:
            sep = r.choice([" ", "\n\t\t", " /* ns: */ ", sep])
        paren = r.choice(["(", "(", " (", "(\n\t"]) if not first else "("
        tail = r.choice(["", "", " /* after */", " // after",
                         " // prose: MODULE_IMPORT_NS(%s)" % self.ns()])
        if split and "\n" not in paren + sep:
            sep = "\n\t\t"
        return f"{macro}{paren}{first}{sep}{arg});{tail}"

    def prose(self) -> str:
        words = [
            f"MODULE_IMPORT_NS({self.ns()})",
            f"EXPORT_SYMBOL_NS_GPL(sym, {self.ns()})",
            f'MODULE_IMPORT_NS("{self.ns()}")',
            "don't", 'a "quote', "a // slash", "a /* nested", "'('",
            "the namespace", "see below", "x = f(y);", "a \\ b", "*",
        ]
        if self.compilable:
            words.remove("a /* nested")
        return self.rng.choice(words)

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


# Modules that build: the same spellings, in a whole module kbuild takes
# (tests/module_kbuild_check.py builds a sample of them against the
# patched kernel, as written and as generate.py module converts them).

class Import(NamedTuple):
    """A namespace a module may import, and a symbol of it the module then
    uses (declared in header), so that modpost insists on the import."""
    namespace: str
    header: str = ""            # e.g. linux/dma-buf.h
    symbol: str = ""


# Where a module sets DEFAULT_SYMBOL_NAMESPACE, chosen by the seed: its
# Kbuild file (bare, '"quoted"' as the tree writes it, \"escaped\"), a
# #define in C, or nowhere.
DEFAULT_PLACES = ("kbuild", "kbuild-quoted", "kbuild-escaped", "c", "none")
KBUILD_FLAG = {"kbuild": "{}", "kbuild-quoted": "'\"{}\"'",
               "kbuild-escaped": '\\"{}\\"'}
# Conditions kbuild's module objects see true (MODULE is defined for
# them, CONFIG_MODULES set) or false.
CONDITIONS = {"#ifdef MODULE": True, "#if defined(CONFIG_MODULES)": True,
              "#ifndef MODULE": False, "#ifdef CONFIG_KBC_NEVER_SET": False}
# What ModuleWriter.body_unit() writes: calls (also on a line after other
# code, by the module's own macros that pass a namespace on or bake it in),
# exports into its own namespaces and into the default one, comments,
# literals, conditions on and off around other units.
BODY_KINDS = ("import", "mixed", "import_define", "import_pass", "export",
              "export_wrapper", "export_define", "export_default", "block",
              "line", "string", "char", "on", "off")


def default_namespace(seed: int, place: str) -> str:
    """The namespace of module kbc_SEED's EXPORT_SYMBOL()s ("" none)."""
    return "" if place == "none" else f"KBC{seed}_DEFAULT"


@dataclass
class Sample:
    """A module's files, and what kbuild must make of them."""
    seed: int
    name: str                       # NAME.ko
    files: dict[str, str]           # file name -> text
    imports: tuple[str, ...]        # modinfo -F import_ns, sorted
    exports: dict[str, str]         # symbol -> namespace ("" none)
    default: str                    # a DEFAULT_PLACES entry
    namespaces: frozenset[str]      # every namespace its code names

    def default_ns(self) -> str:
        """The namespace of EXPORT_SYMBOL() ("" none)."""
        return default_namespace(self.seed, self.default)

    def write(self, root: Path) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            (root / name).write_text(text)
        return root


class ModuleWriter(Writer):
    """Builds one random module that compiles without a warning, and
    records what it imports and exports (not what a false condition
    hides).  Namespaces are written bare or quoted at random."""

    compilable = True

    def __init__(self, seed: int, imports: Sequence[Import]) -> None:
        if not imports:
            raise ValueError("no namespace to import")
        super().__init__(seed)
        self.mod = f"kbc_{seed}"
        self.available = list(imports)
        self.place = DEFAULT_PLACES[seed % len(DEFAULT_PLACES)]
        self.default_ns = default_namespace(seed, self.place)
        self.own = [f"KBC{seed}_{c}" for c in "AB"]
        self.imports: set[str] = set()
        self.uses: dict[str, Import] = {}       # symbol -> its import
        self.exports: dict[str, str] = {}
        self.data: list[str] = []               # literals to reference
        self.active = True

    def spell(self, ns: str) -> str:
        return f'"{ns}"' if self.rng.random() < 0.3 else ns

    def imported(self) -> str:
        """A namespace to import, as written; recorded if the code is on.
        One draw whatever the number of namespaces, so that a seed writes
        the same shapes for every kernel's list."""
        imp = self.available[int(self.rng.random() * len(self.available))]
        if self.active:
            self.imports.add(imp.namespace)
            if imp.symbol:
                self.uses[imp.symbol] = imp
        return self.spell(imp.namespace)

    def function(self, ns: str) -> tuple[str, str]:
        """A function to export into ns: (its name, its definition)."""
        f = f"{self.mod}_{self.name('f')}"
        if self.active:
            self.exports[f] = ns
        return f, (f"int {f}(void);\n\nint {f}(void)\n{{\n"
                   f"\treturn {self.n};\n}}\n")

    def literal(self, text: str) -> str:
        """A static constant holding text, referenced if the code is on."""
        string = text.startswith('"')
        v = self.name(f"{self.mod}_{'s' if string else 'c'}")
        if self.active:
            self.data.append(v if string else f"&{v}")
        return f"static const char {v}{'[]' if string else ''} = {text};"

    def import_call(self, split: bool = False) -> str:
        return self.call_text("MODULE_IMPORT_NS", "", self.imported(), split)

    def export_call(self) -> str:
        ns = self.rng.choice(self.own)
        f, body = self.function(ns)
        macro = self.rng.choice(["EXPORT_SYMBOL_NS", "EXPORT_SYMBOL_NS_GPL"])
        return body + self.call_text(macro, f, self.spell(ns))

    def string_unit(self) -> str:
        return self.literal(self.string())

    def block_unit(self) -> str:
        words = [self.prose() for _ in range(self.rng.randint(1, 4))]
        if self.rng.random() < 0.5:
            return "/* " + " ".join(words) + " */"
        return "/*\n" + "".join(f" * {w}\n" for w in words) + " */"

    def body_unit(self, depth: int = 0, kind: str = "") -> str:
        """One unit of the module (of a random kind by default)."""
        r = self.rng
        kind = kind or r.choice(BODY_KINDS)
        if kind in ("on", "off") and depth > 0:
            kind = "import"
        if kind == "import":
            return self.import_call()
        if kind == "mixed":
            return (f"{self.literal(self.string())} "
                    f"{self.import_call()}")
        if kind == "import_define":
            w = self.name(f"{self.mod.upper()}_IMPORT")
            return (f"#define {w} MODULE_IMPORT_NS({self.imported()})\n"
                    f"{w};")
        if kind == "import_pass":
            w = self.name(f"{self.mod.upper()}_IMPORT")
            return (f"#define {w}(ns) MODULE_IMPORT_NS(ns) /* ns: bare */\n"
                    + self.call_text(w, "", self.imported()))
        if kind == "export":
            return self.export_call()
        if kind == "export_wrapper":
            w = self.name(f"{self.mod.upper()}_EXPORT")
            ns = r.choice(self.own)
            f, body = self.function(ns)
            return (f"#define {w}(s, ns) EXPORT_SYMBOL_NS_GPL(s, ns)\n\n"
                    + body + self.call_text(w, f, self.spell(ns)))
        if kind == "export_define":
            w = self.name(f"{self.mod.upper()}_EXPORT")
            ns = r.choice(self.own)
            f, body = self.function(ns)
            return (f"#define {w}(s) \\\n\tEXPORT_SYMBOL_NS_GPL(s, \\\n"
                    f"\t\t{self.spell(ns)})\n\n{body}{w}({f});")
        if kind == "export_default":
            f, body = self.function(self.default_ns)
            macro = r.choice(["EXPORT_SYMBOL", "EXPORT_SYMBOL_GPL"])
            return f"{body}{macro}({f});"
        if kind == "block":
            return self.block_unit()
        if kind == "line":
            return "// " + " ".join(self.prose()
                                    for _ in range(r.randint(1, 3)))
        if kind == "string":
            return self.string_unit()
        if kind == "char":
            return self.literal(r.choice(
                ["'\"'", "'\\''", "'('", "')'", "'/'", "'\\\\'", "','",
                 "'*'"]))
        # a condition, true (on) or false (off), around a few units
        test = r.choice([c for c, on in CONDITIONS.items()
                         if on == (kind == "on")])
        was, self.active = self.active, self.active and CONDITIONS[test]
        body = "\n\n".join(self.body_unit(depth + 1)
                           for _ in range(r.randint(1, 3)))
        self.active = was
        return f"{test}\n{body}\n#endif"


def compilable(seed: int, imports: Sequence[Import]) -> Sample:
    """A module named kbc_SEED importing some of imports: one import call
    split over lines, an export into a namespace of its own and one into
    the default namespace (none without one), a string, a comment, one
    unit of every
    third kind of BODY_KINDS (which third: by the seed), then random
    units, in a random order."""
    w = ModuleWriter(seed, imports)
    mod = w.mod
    units = [w.import_call(split=True), w.export_call(),
             w.body_unit(kind="export_default"), w.string_unit(),
             w.block_unit()]
    units += [w.body_unit(kind=k) for k in BODY_KINDS[seed % 3::3]]
    units += [w.body_unit() for _ in range(w.rng.randint(1, 5))]
    w.rng.shuffle(units)
    head = ["// SPDX-License-Identifier: GPL-2.0",
            f"/*\n * {mod}: written by tests/test_module_fuzz.py (seed "
            f"{seed}).\n * {w.prose()}\n */"]
    if w.place == "c":
        head.append("#define DEFAULT_SYMBOL_NAMESPACE "
                    + w.spell(w.default_ns))
    head.append('#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt')
    includes = ["linux/init.h", "linux/module.h", "linux/printk.h"]
    includes += sorted({i.header for i in w.uses.values() if i.header}
                       - set(includes))
    tail = []
    if w.uses:
        tail.append(f"static const void *const {mod}_uses[] __used = {{\n"
                    + "".join(f"\t&{s},\n" for s in sorted(w.uses)) + "};")
    if w.data:
        tail.append(f"static const void *const {mod}_data[] __used = {{\n"
                    + "".join(f"\t{d},\n" for d in w.data) + "};")
    tail.append(f"static int __init {mod}_init(void)\n{{\n"
                f'\tpr_info("loaded\\n");\n\treturn 0;\n}}\n'
                f"module_init({mod}_init);\n\n"
                f"static void __exit {mod}_exit(void)\n{{\n}}\n"
                f"module_exit({mod}_exit);")
    tail.append(f'MODULE_DESCRIPTION("Namespace spellings, seed {seed}");\n'
                'MODULE_LICENSE("GPL");')
    text = "\n\n".join(["\n".join(head),
                        "\n".join(f"#include <{h}>" for h in includes)]
                       + units + tail) + "\n"
    kbuild = f"# SPDX-License-Identifier: GPL-2.0\nobj-m := {mod}.o\n"
    if w.place in KBUILD_FLAG:
        kbuild += ("ccflags-y += -DDEFAULT_SYMBOL_NAMESPACE="
                   + KBUILD_FLAG[w.place].format(w.default_ns) + "\n")
    names = {i.namespace for i in imports} | set(w.own)
    return Sample(seed, mod, {f"{mod}.c": text, "Kbuild": kbuild},
                  tuple(sorted(w.imports)), w.exports, w.place,
                  frozenset(names | {w.default_ns} - {""}))


@functools.lru_cache(maxsize=None)
def converted(seed: int) -> tuple[str, tuple[module.Change, ...]]:
    new, changes = module.convert_c("fuzz.c", case(seed).text,
                                    module.load_table())
    return new, tuple(changes)


def unquoted(comment: str) -> str:
    return re.sub(r'"(%s)"' % "|".join(NAMESPACES), r"\1", comment)


def same_but_namespaces(old: list[Tok], new: list[Tok], quoted: bool,
                        names: Iterable[str] = NAMESPACES,
                        quoted_names: Iterable[str] = ()) -> str | None:
    """Why new is not old with each namespace of names spelled as asked
    (quoted_names quoted in any case)."""
    names, quoted_names = set(names), set(quoted_names)
    if len(old) != len(new):
        return f"{len(old)} tokens became {len(new)}"
    for a, b in zip(old, new):
        if a == b and not (a.kind == "ident" and a.text in names
                           or a.kind == "string"
                           and a.text.strip('"') in names):
            continue
        if a.kind == "comment" == b.kind:
            if unquoted(a.text) != unquoted(b.text):
                return f"comment {a.text!r} became {b.text!r}"
            continue
        name = a.text.strip('"')
        want = f'"{name}"' if quoted or name in quoted_names else name
        if name not in names or a.kind not in ("ident", "string") \
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
            why = same_but_namespaces(old, branch(new, NEW if quoted else OLD),
                                      quoted)
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
            toks = branch(new, NEW if quoted else OLD)
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


# The modules that build (compilable()): what tests/module_kbuild_check.py
# builds must be what it expects, on any kernel's list of namespaces.

KBUILD_SEEDS = range(6)         # the sample module_kbuild_check.py builds
COMPILABLE_SEEDS = range(60)
PREPROCESSED_SEEDS = range(30)  # gcc -E, make: a little slower
IMPORTS = (Import("DMA_BUF", "linux/dma-buf.h", "dma_buf_put"),
           Import("CXL"), Import("USB_STORAGE", "linux/usb.h", "usb_x"))
KERNELS = ((6, 1), (6, 12), (6, 13))


@functools.lru_cache(maxsize=None)
def sample(seed: int) -> Sample:
    return compilable(seed, IMPORTS)


@functools.lru_cache(maxsize=None)
def sample_converted(seed: int) -> dict[str, tuple[str, tuple[module.Change,
                                                          ...]]]:
    """File name -> (converted text, changes)."""
    out = {}
    for name, text in sample(seed).files.items():
        if name.endswith(".c"):
            new, changes = module.convert_c(name, text, module.load_table())
        else:
            new, changes = module.convert_kbuild(name, text)
        out[name] = (new, tuple(changes))
    return out


def wants_quotes(s: Sample, kernel: tuple[int, int]) -> set[str]:
    """The namespaces the converted module spells quoted on kernel."""
    calls = kernel >= module.CALLS_FROM
    default = kernel >= module.DEFAULT_FROM
    return {n for n in s.namespaces
            if (default if n == s.default_ns() else calls)}


@pytest.mark.parametrize("chunk", range(3))
def test_compilable_converts_without_warnings(chunk: int) -> None:
    """Every call closes: no warning; the C file changes, and the Kbuild
    file when it sets DEFAULT_SYMBOL_NAMESPACE; a second run changes
    nothing."""
    for seed in COMPILABLE_SEEDS[chunk::3]:
        s = sample(seed)
        for name, (new, changes) in sample_converted(seed).items():
            assert not [c for c in changes if c.warning], (seed, changes)
            kbuild = name == "Kbuild"
            assert (new != s.files[name]) == (
                not kbuild or s.default in KBUILD_FLAG), (seed, name, new)
            again = (module.convert_kbuild(name, new) if kbuild else
                     module.convert_c(name, new, module.load_table()))[0]
            assert again == new, f"seed {seed}, {name}:\n{new}"


@pytest.mark.parametrize("chunk", range(3))
def test_compilable_branches_are_the_input(chunk: int) -> None:
    """On 6.1 every namespace is bare, on 6.13 every one quoted, on 6.12
    DEFAULT_SYMBOL_NAMESPACE alone quoted; nothing else changes."""
    for seed in COMPILABLE_SEEDS[chunk::3]:
        s = sample(seed)
        cname = f"{s.name}.c"
        old = c_tokens(s.files[cname])
        new = sample_converted(seed)[cname][0]
        for kernel in KERNELS:
            why = same_but_namespaces(old, branch(new, kernel), False,
                                      s.namespaces, wants_quotes(s, kernel))
            assert why is None, f"seed {seed}, {kernel}: {why}\n{new}"


# The preprocessor's view: the namespace macros defined to leave a mark,
# the Kbuild file's flags as make gives them for a kernel version.
MARKS = """\
#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + (c))
#define MODULE_IMPORT_NS(ns) kbc_import(ns)
#define EXPORT_SYMBOL_NS(sym, ns) kbc_export(sym, ns)
#define EXPORT_SYMBOL_NS_GPL(sym, ns) kbc_export(sym, ns)
#define EXPORT_SYMBOL(sym) kbc_export(sym, DEFAULT_SYMBOL_NAMESPACE)
#define EXPORT_SYMBOL_GPL(sym) kbc_export(sym, DEFAULT_SYMBOL_NAMESPACE)
"""
MARK = re.compile(r'kbc_(import|export)\((?:\s*(\w+)\s*,)?\s*("?\w+"?)\s*\)')


def kbuild_flags(kbuild: Path, kernel: tuple[int, int]) -> list[str]:
    """ccflags-y of a Kbuild file as kbuild passes it to the compiler."""
    p = run(["make", "-s", "-f", kbuild, f"VERSION={kernel[0]}",
             f"PATCHLEVEL={kernel[1]}", "--eval",
             "kbc-flags: ; @echo $(ccflags-y)", "kbc-flags"], timeout=60)
    return p.stdout.split()


def preprocessed(root: Path, s: Sample, kernel: tuple[int, int]
                 ) -> tuple[list[str], dict[str, str]]:
    """(imports, exports: symbol -> namespace) of root's module, as
    written, the way gcc's preprocessor sees it for kernel built as a
    module; a plain export without a default namespace has ''."""
    cfile = root / f"{s.name}.c"
    inc = root / "include"
    for h in re.findall(r"^#include <([^>]+)>", cfile.read_text(), re.M):
        (inc / h).parent.mkdir(parents=True, exist_ok=True)
        (inc / h).touch()
    (root / "marks.h").write_text(MARKS)
    code = (kernel[0] << 16) + (kernel[1] << 8)
    p = run(["gcc", "-E", "-P", "-nostdinc", "-I", inc, "-include",
             root / "marks.h", f"-DLINUX_VERSION_CODE={code}", "-DMODULE",
             "-DCONFIG_MODULES=1", *kbuild_flags(root / "Kbuild", kernel),
             cfile], timeout=60)
    imports, exports = [], {}
    for kind, sym, ns in MARK.findall(p.stdout):
        if kind == "import":
            imports.append(ns)
        else:
            exports[sym] = "" if ns == "DEFAULT_SYMBOL_NAMESPACE" else ns
    return imports, exports


@pytest.mark.skipif(shutil.which("gcc") is None or
                    shutil.which("make") is None, reason="no gcc or make")
@pytest.mark.parametrize("chunk", range(3))
def test_compilable_imports_and_exports(chunk: int, tmp_path: Path) -> None:
    """What the preprocessor makes of the module, as written and converted,
    is what the sample says kbuild must find: as written on every kernel
    (the patched kernels take either spelling), converted with the
    spelling each kernel takes."""
    for seed in PREPROCESSED_SEEDS[chunk::3]:
        s = sample(seed)
        written = s.write(tmp_path / f"{seed}-written")
        conv = tmp_path / f"{seed}-converted"
        Sample(seed, s.name, {n: t for n, (t, _) in
                              sample_converted(seed).items()},
               s.imports, s.exports, s.default, s.namespaces).write(conv)
        for kernel in KERNELS:
            for root in (written, conv):
                imports, exports = preprocessed(root, s, kernel)
                where = f"seed {seed}, {root.name}, {kernel}"
                assert sorted({i.strip('"') for i in imports}) == \
                    list(s.imports), where
                assert {k: v.strip('"') for k, v in exports.items()} == \
                    s.exports, where
                if root == conv:
                    quoted = wants_quotes(s, kernel)
                    for ns in imports + [e for e in exports.values() if e]:
                        assert ns.startswith('"') == (ns.strip('"') in
                                                      quoted), (where, ns)


def test_compilable_samples_cover_the_shapes() -> None:
    """module_kbuild_check.py's sample has, across its modules, every
    place of DEFAULT_SYMBOL_NAMESPACE, calls split over lines and both
    spellings, the module's own wrappers and #defines, a false condition,
    macro text in strings and comments, a symbol used from an import;
    each module imports and exports into a namespace of its own."""
    samples = [sample(seed) for seed in KBUILD_SEEDS]
    texts = "\n".join(s.files[f"{s.name}.c"] for s in samples)
    assert {s.default for s in samples} == set(DEFAULT_PLACES)
    assert all(s.imports for s in samples)
    assert all((s.default_ns() in s.exports.values()) for s in samples)
    assert all(ns.startswith(f"KBC{s.seed}_") for s in samples
               for ns in s.exports.values() if ns)
    assert all(set(s.exports.values()) & set(s.namespaces) for s in samples)
    for shape in (r"MODULE_IMPORT_NS\s*\(\s*\n", r'MODULE_IMPORT_NS\(\s*"',
                  r"MODULE_IMPORT_NS\((?!ns\))\w", r"EXPORT_SYMBOL_NS(_GPL)?\("
                  r"\w+,\s*\n", r"#define \w+\(ns\) MODULE_IMPORT_NS\(ns\)",
                  r"#define \w+ MODULE_IMPORT_NS\(", r"#define \w+\(s, ns\)",
                  r"#define \w+\(s\) \\\n", r"EXPORT_SYMBOL(_GPL)?\(",
                  r"#ifndef MODULE|#ifdef CONFIG_KBC_NEVER_SET",
                  r'"[^"\n]*MODULE_IMPORT_NS\(', r"/\*[^/]*MODULE_IMPORT_NS\(",
                  r"//.*MODULE_IMPORT_NS\(", r"&dma_buf_put"):
        assert re.search(shape, texts), shape
