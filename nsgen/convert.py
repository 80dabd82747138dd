"""The generated steps of the series: what each changes and how it says so."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from . import macros, recipe, sites, subject, textconv
from .run import ToolError
from .spatch import FILE_TIMEOUT, Spatch, run_spatch
from .steps import module_built, module_makefiles
from .tree import Repo

PROJECT = Path(__file__).resolve().parent.parent
COCCI = PROJECT / "cocci"
NS_STRING_SUBJECT = "treewide: write symbol namespaces as string literals"
PART = re.compile(re.escape(NS_STRING_SUBJECT) + r"(?: \((\d+)/(\d+)\))?")


def is_ns_string(subject: str) -> bool:
    """Is this the treewide conversion's subject, or one of its parts'?"""
    return PART.fullmatch(subject.strip()) is not None
EQUIVALENCE_ALLOW = COCCI / "equivalence.allow"


class Status(Enum):
    CHANGED = "changed"
    NOTHING = "nothing to do"


@dataclass
class Part:
    subject: str
    message: str
    files: list[str]


@dataclass
class StepResult:
    name: str
    status: Status
    elapsed: float = 0.0
    subject: str = ""
    message: str = ""
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # deterministic facts
    cached: int = 0        # files whose spatch result came from the cache
    replayed: bool = False  # the whole result from an earlier run (memo)
    # Files outside the commit whose maintainers its mail is Cc'd to (the
    # Makefiles of the modules an export is restricted to).
    cc_files: list[str] = field(default_factory=list)
    # A change too large for one mail, in parts that each build: each
    # part's subject, message and files, in order (empty: one commit).
    parts: list[Part] = field(default_factory=list)


def git_grep(repo: Repo, names: list[str], *paths: str) -> list[str]:
    """Files of the work tree that name one of names as a whole word."""
    if not names:
        return []
    patterns = [arg for n in sorted(names) for arg in ("-e", n)]
    out = repo.git("grep", "-l", "-I", "-w", "-F", *patterns, "--",
                   *(paths or ["."]), check=False)
    return sorted(out.split())


WHAT = ("Write every namespace argument as a C string literal, and make the "
        "macros pass the string through instead of stringifying it.  The "
        "namespace strings that reach the object files do not change, so "
        "nothing changes for loaded modules.  ")
CREDIT = ("Masahiro Yamada proposed string namespaces in the discussion of "
          "exports restricted to named modules (November 2024).")


# vger.kernel.org's lists refuse larger mails; a part's diff and message
# stay under it (tests/mail_check.py checks every mail against it).
MAIL_LIMIT = 100_000
PART_BUDGET = 80_000
TRANSITION = re.compile(
    r"(?P<comment># a string literal\.)  Until every namespace of the tree "
    r"is one, its code may\n# write either too: the conversion's last patch "
    r"takes this out\.\n"
    r"KBUILD_NS_AS_WRITTEN \?= y\n"
    r"ifneq \(\$\(KBUILD_EXTMOD\)\$\(KBUILD_NS_AS_WRITTEN\),\)\n")


def end_transition(root: Path) -> bool:
    """Take out what lets the tree's own code write either spelling while
    it is converted (patch 0003's KBUILD_NS_AS_WRITTEN in
    scripts/Makefile.lib): the conversion is complete.  False when the
    tree has no such transition (then the conversion is one commit)."""
    lib = root / "scripts" / "Makefile.lib"
    if not lib.is_file():
        return False
    text = lib.read_text(encoding="utf-8", errors="surrogateescape")
    new, n = TRANSITION.subn(
        lambda m: m.group("comment") + "\nifneq ($(KBUILD_EXTMOD),)\n", text)
    if n != 1:
        return False
    lib.write_text(new, encoding="utf-8", errors="surrogateescape")
    return True


def diff_sizes(repo: Repo, files: list[str]) -> dict[str, int]:
    """The size of each staged file's diff as format-patch writes it (and
    its diffstat line)."""
    text = repo.git("diff", "--cached", "--no-renames", "--", *files)
    sizes: dict[str, int] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", text):
        m = re.match(r"diff --git a/(\S+) b/", chunk)
        if m:
            sizes[m.group(1)] = len(chunk.encode()) + 90
    return sizes


def split_parts(repo: Repo, changed: list[str], last: set[str],
                message: str) -> list[Part]:
    """The conversion as parts of under MAIL_LIMIT each, when it is larger
    than that: the call sites in path order, PART_BUDGET of diff a part,
    and last the files of the edits after spatch (the macros' definitions,
    the end of the transition, documentation, scripts) with the message
    that explains it all.  Each part builds: until the last, the tree's
    code may write either spelling (KBUILD_NS_AS_WRITTEN)."""
    sizes = diff_sizes(repo, changed)
    if sum(sizes.values()) + len(message) < MAIL_LIMIT:
        return []
    groups: list[list[str]] = [[]]
    used = 0
    for f in sorted(f for f in changed if f not in last):
        if groups[-1] and used + sizes.get(f, 0) > PART_BUDGET:
            groups.append([])
            used = 0
        groups[-1].append(f)
        used += sizes.get(f, 0)
    final = sorted(f for f in changed if f in last)
    if sum(sizes.get(f, 0) for f in final) + len(message) > MAIL_LIMIT:
        raise ToolError(f"the conversion's last part would be over "
                        f"{MAIL_LIMIT // 1000} KB: too many edits after "
                        "spatch")
    total = len(groups) + 1
    parts = []
    for i, files in enumerate(groups, 1):
        subject = f"{NS_STRING_SUBJECT} ({i}/{total})"
        tops: dict[str, int] = {}
        for f in files:
            top = "/".join(f.split("/")[:2]) if f.count("/") > 1 \
                else f.split("/")[0]
            tops[top] = tops.get(top, 0) + 1
        where = ", ".join(f"{d} ({n})" for d, n in tops.items())
        body = fill(
            f"Part {i} of {total} of the conversion of symbol namespaces to "
            f"string literals: the call sites in {len(files)} files, from "
            f"{files[0]} to {files[-1]}.  Until the last part, the tree's "
            "own code may write a namespace either way "
            "(KBUILD_NS_AS_WRITTEN in scripts/Makefile.lib), so each part "
            "builds and gives the same namespaces; the last part explains "
            f"the change and carries the script that makes all {total} "
            "parts.")
        dirs = indent(textwrap.fill(where, 68, break_on_hyphens=False))
        parts.append(Part(subject, f"{subject}\n\n{body}\n\nFiles by "
                          f"directory:\n\n{dirs}\n", files))
    head, _, rest = message.partition("\n")
    subject = f"{head} ({total}/{total})"
    parts.append(Part(subject, subject + "\n" + rest, final))
    return parts


def extmod_sentence(root: Path) -> str:
    """What the message says about modules built outside the tree: they
    keep either spelling where the tree has the patch that allows it."""
    lib = root / "scripts" / "Makefile.lib"
    if lib.is_file() and "__KBUILD_EXTMOD_NS" in lib.read_text(
            errors="replace"):
        return ("Modules built outside the tree keep building with either "
                "spelling (previous patch).  ")
    return ("Code outside the tree that still writes a bare identifier no "
            "longer builds and must quote its namespaces the same way.  ")


def staged_tree(repo: Repo) -> str:
    """The work tree as a git tree id (everything staged)."""
    repo.git("add", "-f", "-A", "--", ".")
    return repo.git("write-tree").strip()


def default_ns_files(repo: Repo) -> list[str]:
    """Files that name DEFAULT_SYMBOL_NAMESPACE, also inside a word: a
    Makefile spells it -DDEFAULT_SYMBOL_NAMESPACE=FOO."""
    out = repo.git("grep", "-l", "-I", "-F", "-e", textconv.DEFAULT_NS,
                   "--", ".", check=False)
    return sorted(out.split())


def discover(repo: Repo, files: list[str] | None = None) -> macros.NsMacros:
    """Namespace macros of the work tree, following wrappers to a fixed point.

    Each round greps the tree for the names the previous round found; with
    files given, only those files are read (a re-check after conversion).
    """
    root = repo.work_tree
    assert root is not None
    defs: dict[str, list[macros.Define]] = {}

    def read(paths: list[str]) -> None:
        for f in paths:
            if f not in defs:
                defs[f] = list(macros.defines(f, macros.read_text(root / f)))

    if files is not None:
        read(files)
        found = macros.discover_defines(d for f in sorted(defs) for d in defs[f])
    else:
        searched: set[str] = set()
        todo = sorted(macros.STRING_SINKS) + [macros.MODINFO_IMPORT[1]]
        while todo:
            searched.update(todo)
            read(git_grep(repo, todo, "*.c", "*.h"))
            found = macros.discover_defines(
                d for f in sorted(defs) for d in defs[f])
            todo = sorted((set(found.ident) | set(found.string)) - searched)
    for f in sorted(defs):
        for d in defs[f]:
            index = found.ident.get(d.name)
            if index is not None and len(d.params) > index \
                    and index != len(d.params) - 1:
                raise ToolError(f"{d.path}:{d.line}: {d.name}() takes its "
                                f"namespace as argument {index + 1}, not "
                                "last; ns_string.cocci only handles a last "
                                "namespace argument")
    return found


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def fill(text: str) -> str:
    """A paragraph wrapped at 72 columns, words and 'in-tree' kept whole."""
    return textwrap.fill(text, 72, break_long_words=False,
                         break_on_hyphens=False)


def indent(text: str) -> str:
    return textwrap.indent(text, "    ")


def summary_table(counts: dict[str, tuple[int, int]]) -> str:
    lines = [f"{d:<16} {f:>5} files {h:>6} hunks" for d, (f, h) in counts.items()]
    total_f = sum(f for f, _ in counts.values())
    total_h = sum(h for _, h in counts.values())
    lines.append(f"{'total':<16} {total_f:>5} files {total_h:>6} hunks")
    return "\n".join(lines)


NS_STRING_COCCI = COCCI / "ns_string.cocci"
# cocci/ns_string.cocci's constraint on a macro name, which calls Python for
# every name spatch meets.
NAME_CONSTRAINT = re.compile(
    r"^(?P<decl>(?:declarer|identifier) (?P<var>\w+)) : script:python \(\) "
    r"\{ (?P=var) in NS_MACROS \};$", re.M)


def with_names_inlined(text: str, names: list[str]) -> str:
    """cocci/ns_string.cocci with its Python constraints on macro names
    ('d : script:python () { d in NS_MACROS }') written as the regular
    expression of the same names ('d =~ "^(A|B)$"'), which spatch checks
    itself: a third faster on a kernel, same result (tests/test_cocci.py)."""
    if not names or not all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
        raise ToolError(f"not macro names: {names!r}")
    regex = "^(" + "|".join(names) + ")$"
    new, count = NAME_CONSTRAINT.subn(
        lambda m: f'{m.group("decl")} =~ "{regex}";', text)
    if count == 0:
        raise ToolError(f"{NS_STRING_COCCI.name}: no constraint "
                        "'NAME : script:python () { NAME in NS_MACROS };'")
    return new


def ns_string_spatch(spatch_bin: str, version: str, names: list[str],
                     inline: bool = True) -> Spatch:
    """spatch as the ns-string step runs it, for the given macro names:
    cocci/ns_string.cocci with -D ns_macros=NAMES, the names inlined into
    its constraints unless inline is False (a file of its own in the
    temporary directory, named by its content)."""
    cocci = NS_STRING_COCCI
    if inline:
        text = with_names_inlined(cocci.read_text(), names)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        cocci = Path(tempfile.gettempdir()) / f"ns-series-ns_string-{digest}.cocci"
        if not cocci.is_file() or cocci.read_text() != text:
            tmp = cocci.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text)
            tmp.replace(cocci)
    return Spatch(spatch_bin, version, cocci, (
        "--macro-file", str(COCCI / "ns_string.h"), "--no-includes",
        "--max-width", "200", "--timeout", str(FILE_TIMEOUT), "-D", "patch",
        "-D", "ns_macros=" + ",".join(names)))


def export_for_spatch(spatch_bin: str, version: str,
                      entries: list["ExportFor"]) -> Spatch:
    """spatch as the export-for step runs it, for the given table entries."""
    arg = ";".join(f"{e.symbol}:{e.modules}" for e in entries)
    return Spatch(spatch_bin, version, COCCI / "export_for.cocci", (
        "--no-includes", "--timeout", str(FILE_TIMEOUT), "-D", "patch",
        "-D", f"export_for={arg}"))


def ns_string(repo: Repo, spatch_bin: str, version: str, jobs: int,
              cache: Path) -> StepResult:
    """Quote every namespace argument; stop the macros stringifying."""
    start = time.monotonic()
    root = repo.work_tree
    assert root is not None
    found = discover(repo)
    result = StepResult("ns-string", Status.NOTHING)
    names = found.names()
    default_files = default_ns_files(repo)
    pristine = repo.git("rev-parse", "HEAD^{tree}").strip()
    defaults = textconv.quote_default_namespace(root, default_files)
    if not names and not defaults:
        result.notes.append("no identifier namespaces: the tree is already "
                            "converted")
        return result
    sp = ns_string_spatch(spatch_bin, version, names)
    hints, options = COCCI / "ns_string.h", sp.options
    all_files = git_grep(repo, names)
    c_files = [f for f in all_files if f.endswith((".c", ".h"))]
    trees = [pristine, staged_tree(repo)]
    res = run_spatch(sp, root, c_files, cache, jobs)
    if res.failed:
        f, why = res.failed[0]
        raise ToolError(f"spatch failed on {len(res.failed)} file(s), first "
                        f"{f}: {why}")
    trees.append(staged_tree(repo))
    roots = textconv.unstringify(root, found.roots)
    leftovers = textconv.quote_leftovers(root, all_files, found.ident)
    rules = textconv.load_rules(COCCI / "scripts.rules")
    scripts = textconv.apply_script_rules(root, all_files, rules)
    transition = end_transition(root)
    problems = completeness(repo, found.ident, rules, all_files,
                            sorted({d.path for d, _ in found.roots}))
    problems += textconv.bare_default_namespaces(root, default_files)
    if problems:
        raise ToolError(f"{len(problems)} bare namespace(s) left after the "
                        f"conversion, first {problems[0]}")
    repo.git("add", "-f", "-A", "--", ".")
    changed = repo.git("diff", "--cached", "--name-only").split()
    if not changed:
        result.notes.append("nothing to convert")
        return result

    root_lines = "\n".join(f"{d.path}:{d.line}: {d.name}()"
                           for d, _ in found.roots)
    text_lines = "\n".join(f"{s.path}:{s.line}: {s.macro}(..., {s.arg})"
                           for s in leftovers) or "(none)"
    # The rules of this tree: scripts that mention the macros, and the
    # documentation sentences that were fixed.
    mentioned = set(all_files)
    rule_lines = "\n".join(
        f"{r.path}: {r.why}" for r in rules
        if r.path in mentioned and (not textconv.PROSE_OR_C.search(r.path)
                                    or r.path in scripts)) or "(none)"
    trees.append(staged_tree(repo))
    opts = list(options)
    at = opts.index("--macro-file")
    del opts[at:at + 2]
    script = recipe.script(NS_STRING_COCCI.read_text(), hints.read_text(),
                           opts,
                           names, recipe.edits(repo, trees[0], trees[1]),
                           recipe.edits(repo, trees[2], trees[3]))
    result.subject = NS_STRING_SUBJECT
    result.message = f"""{result.subject}

EXPORT_SYMBOL_NS(), EXPORT_SYMBOL_NS_GPL() and MODULE_IMPORT_NS() take
the namespace as a bare identifier and stringify it.  An identifier cannot
spell a list of module names, which an export restricted to some modules
needs ("module:kvm,kvm_amd"), and stringifying would expand an identifier
that happens to be a macro where the export stands.

{fill(WHAT + extmod_sentence(root) + CREDIT)}

Macros that take a namespace (found from the tree's #defines; the
namespace is their last argument):

{indent(chr(10).join(names))}

Definitions that stop stringifying:

{indent(root_lines)}

Namespaces quoted by spatch: {len(res.changed)} files.  Quoted by the
generator's text step because spatch does not reach them (comments,
documentation, code spatch cannot parse):

{indent(text_lines)}

Scripts that read or write the macros, and sentences of the documentation
that said the namespace is an identifier:

{indent(rule_lines)}
{default_paragraph(defaults)}{allow_paragraph(changed)}
This commit is generated.  The script below makes it: run on the tree
before the conversion (where the conversion is in parts, the parent of
the first), from the top of the tree, with Coccinelle {version} and GNU
sed, it gives this commit's tree byte for byte.  spatch's rules are inline;
the sed commands are the edits of what spatch does not reach (the macros'
definitions, comments, documentation, scripts):

{indent(script)}

Changes per top-level directory:

{indent(summary_table(staged_counts(repo)))}

Suggested-by: Masahiro Yamada <masahiroy@kernel.org>
"""
    result.status = Status.CHANGED
    result.files = changed
    result.cached = res.cached
    if transition:
        last = set(repo.git("diff", "--name-only", "--no-renames", trees[2],
                            trees[3]).split())
        result.parts = split_parts(repo, changed, last, result.message)
        if result.parts:
            result.notes.append(f"in {len(result.parts)} parts of under "
                                f"{MAIL_LIMIT // 1000} KB each")
    result.notes.append(f"{len(res.changed)} files by spatch, "
                        f"{len(leftovers)} sites by "
                        f"the text step, {len(roots)} definitions, "
                        f"{len(scripts)} scripts"
                        + (f", {len(defaults)} {textconv.DEFAULT_NS} sites"
                           if defaults else ""))
    result.elapsed = time.monotonic() - start
    return result


def default_paragraph(edits: list[textconv.DefaultNsEdit]) -> str:
    """The commit message's account of DEFAULT_SYMBOL_NAMESPACE, if bare."""
    if not edits:
        return ""
    lines = "\n".join(f"{e.path}:{e.line}: {e.what}" for e in edits)
    return f"""
DEFAULT_SYMBOL_NAMESPACE, which names the namespace of a whole file or
directory, becomes a string the same way: #define DEFAULT_SYMBOL_NAMESPACE
"FOO" in C, -DDEFAULT_SYMBOL_NAMESPACE='"FOO"' in Makefiles, and
include/linux/export.h passes it on instead of stringifying it:

{indent(lines)}
"""


def staged_counts(repo: Repo) -> dict[str, tuple[int, int]]:
    """{top-level directory: (files, hunks)} of the staged changes."""
    out = repo.git("diff", "--cached", "--unified=0")
    counts: dict[str, list[int]] = {}
    top = ""
    for line in out.splitlines():
        if line.startswith("diff --git a/"):
            path = line.split(" b/", 1)[0][len("diff --git a/"):]
            top = path.split("/", 1)[0] if "/" in path else "(top)"
            counts.setdefault(top, [0, 0])[0] += 1
        elif line.startswith("@@"):
            counts[top][1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(counts.items())}


def completeness(repo: Repo, ident: dict[str, int],
                 rules: list[textconv.ScriptRule],
                 files: list[str] | None = None,
                 root_files: list[str] | None = None) -> list[str]:
    """Every bare namespace left, as 'file:line: MACRO(..., NS): why'.

    files: the files that name a macro (grepped when not given);
    root_files: where stringifying definitions were (the whole tree's
    namespace macros are found again when not given).
    """
    root = repo.work_tree
    assert root is not None
    problems: list[str] = []
    after = discover(repo, root_files)
    for d, p in after.roots:
        problems.append(f"{d.path}:{d.line}: {d.name}() still stringifies {p}")
    covered = {r.path for r in rules}
    for f in files if files is not None else git_grep(repo, sorted(ident)):
        if not textconv.PROSE_OR_C.search(f):
            if f not in covered:
                problems.append(f"{f}: a script with no rule")
            continue
        for s in sites.find_sites(f, macros.read_text(root / f), ident):
            if s.kind in (sites.Kind.BARE, sites.Kind.QUOTED_PARAM):
                problems.append(f"{f}:{s.line}: {s.macro}(..., {s.arg}): "
                                f"{s.kind.value}")
    return problems


@dataclass(frozen=True)
class ExportFor:
    symbol: str
    modules: str


def read_table(path: Path) -> list[ExportFor]:
    entries = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not re.fullmatch(r"[A-Za-z_]\w*", parts[0]):
            raise ToolError(f"{path}:{n}: expected 'symbol module[,module...]'")
        entries.append(ExportFor(parts[0], parts[1]))
    return entries


def read_allow(path: Path | None = None) -> dict[str, str]:
    """{path: reason} of the equivalence allow-list (cocci/equivalence.allow
    unless path is given): the touched C files whose preprocessed output may
    change, each with a reviewed reason."""
    path = path or EQUIVALENCE_ALLOW
    if not path.is_file():
        return {}
    entries: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or not parts[0].endswith(".c"):
            raise ToolError(f"{path}:{n}: expected 'path/file.c reason'")
        entries[parts[0]] = parts[1]
    return entries


def allow_paragraph(changed: list[str]) -> str:
    """The commit message's account of the allow-listed files it touches."""
    allow = read_allow()
    hits = [f for f in sorted(allow) if f in changed]
    if not hits:
        return ""
    lines = "\n".join(f"{f}: {allow[f]}" for f in hits)
    return f"""
The preprocessed output of these files changes, each for the reason
given (cocci/equivalence.allow; every other touched C file preprocesses
to the same tokens before and after, see 'make verify'):

{indent(lines)}
"""


# Macros that export into a "module:" namespace, ours and upstream's.
RESTRICTING = ("EXPORT_SYMBOL_GPL_FOR", "EXPORT_SYMBOL_FOR_MODULES",
               "EXPORT_SYMBOL_GPL_FOR_MODULES")


def export_macro(repo: Repo) -> str:
    """The macro the generated exports use: upstream's name where the tree
    has it (7.x), else ours."""
    root = repo.work_tree
    assert root is not None
    text = macros.read_text(root / "include/linux/export.h")
    if re.search(r"^#define EXPORT_SYMBOL_FOR_MODULES\(", text, re.M):
        return "EXPORT_SYMBOL_FOR_MODULES"
    return "EXPORT_SYMBOL_GPL_FOR"


def _grep(repo: Repo, word: str, regex: str) -> str:
    """git grep -n -E regex in the C files and headers that have word (a
    fixed-string search first: an anchored regular expression over every
    file of a kernel takes seconds, the word a fraction of one)."""
    files = repo.git("grep", "-l", "-F", "-w", "-e", word, "--", "*.c",
                     "*.h", check=False).split()
    if not files:
        return ""
    return repo.git("grep", "-n", "-E", regex, "--", *files, check=False)


def _defines(repo: Repo, name: str, function_like: bool) -> list[tuple[str, int, str]]:
    """(file, line, text) of every #define of name in the tree's headers and
    C files, continuation lines joined."""
    root = repo.work_tree
    assert root is not None
    paren = r"\(" if function_like else r"([[:space:]]|$)"
    out = _grep(repo, name, rf"^[[:space:]]*#[[:space:]]*define[[:space:]]+"
                rf"{name}{paren}")
    found = []
    for line in out.splitlines():
        path, num, _ = line.split(":", 2)
        lines = macros.read_text(root / path).split("\n")
        i = int(num) - 1
        text = lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        found.append((path, int(num), " ".join(text.split())))
    return found


def restricted_export(repo: Repo, symbol: str) -> str | None:
    """How the tree already restricts symbol's export to modules, or None:
    'MACRO() at FILE:LINE' and the definitions that say to which modules."""
    out = _grep(repo, symbol, rf"^[[:space:]]*(\w+)\([[:space:]]*{symbol}"
                r"[[:space:]]*[,)]")
    for line in out.splitlines():
        path, num, text = line.split(":", 2)
        m = re.match(rf"\s*(\w+)\(\s*{symbol}\b", text)
        if not m or not m.group(1).startswith("EXPORT_"):
            continue
        macro = m.group(1)
        if macro in RESTRICTING:
            return f"{text.strip()} at {path}:{num}"
        seen, todo, defs = {macro}, [macro], []
        while todo:
            for d in _defines(repo, todo.pop(), True):
                defs.append(d)
                for called in re.findall(r"\b(EXPORT_\w+)\(", d[2].split(")", 1)[-1]):
                    if called not in seen:
                        seen.add(called)
                        todo.append(called)
        if not any(c in RESTRICTING or '"module:"' in d[2]
                   for d in defs for c in re.findall(r"\b(\w+)\(", d[2])):
            continue
        arch = path.split("/")[1] if path.startswith("arch/") else None
        objs = sorted({o for d in defs for o in re.findall(
            r"__stringify\((\w+)\)", d[2])})
        for o in objs:
            defs.extend(d for d in _defines(repo, o, False)
                        if arch is None or not d[0].startswith("arch/")
                        or d[0].startswith(f"arch/{arch}/"))
        listing = "; ".join(f"{d[0]}:{d[1]}: {d[2]}" for d in defs)
        return f"{macro}({symbol}) at {path}:{num}, defined as: {listing}"
    return None


def export_for(repo: Repo, spatch_bin: str, version: str, jobs: int,
               cache: Path) -> StepResult:
    """Turn the exports listed in cocci/export_for.table into _FOR exports."""
    start = time.monotonic()
    root = repo.work_tree
    assert root is not None
    table_path = COCCI / "export_for.table"
    table = read_table(table_path)
    result = StepResult("export-for", Status.NOTHING)
    files: set[str] = set()
    todo = []
    # the files that name a symbol of the table at all, in one search; the
    # regular expressions then read only those
    named = git_grep(repo, sorted({e.symbol for e in table}), "*.c", "*.h")

    def grep(regex: str) -> list[str]:
        if not named:
            return []
        return repo.git("grep", "-l", "-E", regex, "--", *named,
                        check=False).split()

    for e in table:
        hits = grep(rf"EXPORT_SYMBOL_GPL\(\s*{e.symbol}\s*\)")
        done = grep(rf"EXPORT_SYMBOL_GPL_FOR\(\s*{e.symbol}\s*,")
        if not hits and done:
            result.notes.append(f"{e.symbol}: already restricted")
            continue
        already = None if hits else restricted_export(repo, e.symbol)
        if already:
            result.notes.append(
                f"{e.symbol}: the tree already restricts it; its own list "
                f"is kept, where the table says {e.modules}: {already}")
            continue
        if not hits:
            raise ToolError(f"{table_path.name}: {e.symbol} is not exported "
                            "with EXPORT_SYMBOL_GPL() in this tree")
        for mod in e.modules.split(","):
            if not mod or not module_built(repo, mod):
                raise ToolError(f"{table_path.name}: {e.symbol}: no Kbuild "
                                f"file builds a module {mod!r}")
        files.update(hits)
        todo.append(e)
    if not todo:
        return result
    sp = export_for_spatch(spatch_bin, version, todo)
    cocci, options = sp.cocci, sp.options
    res = run_spatch(sp, root, sorted(files), cache, jobs)
    if res.failed:
        raise ToolError(f"spatch failed on {res.failed[0][0]}: {res.failed[0][1]}")
    macro = export_macro(repo)
    if macro != "EXPORT_SYMBOL_GPL_FOR":
        # upstream's spelling where the tree has it; ours is its alias
        for f in res.changed:
            text = macros.read_text(root / f)
            syms = "|".join(re.escape(e.symbol) for e in todo)
            text = re.sub(rf"\bEXPORT_SYMBOL_GPL_FOR(\(\s*(?:{syms})\s*,)",
                          rf"{macro}\1", text)
            (root / f).write_text(text, encoding="utf-8",
                                  errors="surrogateescape")
    repo.git("add", "-f", "-A", "--", ".")
    changed = repo.git("diff", "--cached", "--name-only").split()
    missing = [e.symbol for e in todo
               if not re.search(rf"{macro}\(\s*{e.symbol}\s*,",
                                repo.git("diff", "--cached"))]
    if missing:
        raise ToolError(f"spatch did not rewrite the export of {missing[0]}")
    listing = "\n".join(f"{e.symbol} -> {e.modules}" for e in todo)
    cmd = shlex.join([spatch_bin, "--sp-file", "cocci/export_for.cocci",
                      *options, "--in-place", *sorted(files)])
    mods = sorted({m.rstrip("*") for e in todo for m in e.modules.split(",")})
    if len(todo) == 1:
        e = todo[0]
        first = e.modules.split(",")[0].rstrip("*")
        result.subject = subject.subject(
            root, changed[0], f"export {e.symbol}() only to "
            f"{e.modules.replace(',', ', ')}")
        why = (f"{e.symbol}() is exported for {first} alone, yet any GPL "
               "module can link to it today.")
    else:
        result.subject = "treewide: restrict exports to the modules that use them"
        why = "These symbols are exported for the modules named below alone."
    body = f"""{why}  Export it with {macro}(): the module
loader and modpost then refuse every module that is not an in-tree module
of the listed names.  Nothing changes for the listed modules, which need
no MODULE_IMPORT_NS() for it.
"""
    if len(changed) > 1:
        body += f"""
Restricted exports (cocci/export_for.table {sha(table_path)}):

{indent(listing)}

This commit is generated.  To reproduce it, with Coccinelle {version}
(cocci/export_for.cocci {sha(cocci)}), run:

{indent(cmd)}

Changes per top-level directory:

{indent(summary_table(staged_counts(repo)))}
"""
    result.message = f"{result.subject}\n\n{fill(body)}\n" \
        if len(changed) == 1 else f"{result.subject}\n\n{body}"
    # The listed modules' Makefiles, of the exporting file's architecture
    # when it has one (kvm is built by every arch/*/kvm/Makefile).
    arches = {f.split("/")[1] for f in changed if f.startswith("arch/")}
    result.cc_files = [
        f for f in module_makefiles(repo, mods)
        if not arches or not f.startswith("arch/")
        or f.split("/")[1] in arches]
    result.status = Status.CHANGED
    result.files = changed
    result.cached = res.cached
    result.elapsed = time.monotonic() - start
    return result


STEPS = {"ns-string": ns_string, "export-for": export_for}


def code_key(spatch_bin: str, version: str) -> str:
    """What a generated step's result depends on besides the tree: this
    project's code and Coccinelle files (cocci/: rules, tables, allow
    list), and spatch."""
    h = hashlib.sha256(f"{spatch_bin}\0{version}\0".encode())
    for f in sorted([*(PROJECT / "nsgen").glob("*.py"),
                     *(p for p in COCCI.rglob("*") if p.is_file())]):
        h.update(f.relative_to(PROJECT).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def run_step(name: str, repo: Repo, spatch_bin: str, version: str,
             jobs: int, cache: Path, recompute: bool = False) -> StepResult:
    """STEPS[name] on the work tree, or its result replayed.

    A step is a function of the tree it starts from and of code_key(): a
    run records its result (the tree it leaves staged, message, files,
    notes) under cache/steps/ by the two, and a later run from the same
    tree with the same code stages that tree again instead of running
    the step (git read-tree: only the step's files are rewritten).  With
    recompute, or when the recorded tree is gone, the step runs."""
    start = time.monotonic()
    before = repo.git("rev-parse", "HEAD^{tree}").strip()
    key = hashlib.sha256(f"{name}\0{before}\0{code_key(spatch_bin, version)}"
                         .encode()).hexdigest()
    memo = cache / "steps" / f"{key}.json"
    if memo.is_file() and not recompute:
        d = json.loads(memo.read_text())
        status = Status(d["status"])
        if status is Status.NOTHING or repo.git(
                "cat-file", "-t", d["tree"], check=False).strip() == "tree":
            if status is Status.CHANGED:
                repo.git("read-tree", "-m", "-u", "HEAD", d["tree"])
            return StepResult(name, status, time.monotonic() - start,
                              d["subject"], d["message"], d["files"],
                              d["notes"], replayed=True,
                              cc_files=d.get("cc_files", []),
                              parts=[Part(*x) for x in d.get("parts", [])])
    r = STEPS[name](repo, spatch_bin, version, jobs, cache)
    tree = repo.git("write-tree").strip()
    memo.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({
        "status": r.status.value, "tree": tree, "subject": r.subject,
        "message": r.message, "files": r.files, "notes": r.notes,
        "cc_files": r.cc_files,
        "parts": [[x.subject, x.message, x.files] for x in r.parts]},
        indent=1, sort_keys=True))
    tmp.replace(memo)
    return r


@dataclass
class CheckReport:
    problems: list[str]
    rechanged: list[str]
    sites: int
    files: int


def check_converted(repo: Repo, before: macros.NsMacros, spatch_bin: str,
                    version: str, jobs: int, cache: Path) -> CheckReport:
    """Prove the conversion complete and idempotent on a converted tree.

    Complete: no macro stringifies a namespace any more, and no argument of
    the macros the pristine tree had is bare (or a quoted parameter).
    Idempotent: spatch with the pristine tree's macro names changes nothing.
    """
    root = repo.work_tree
    assert root is not None
    rules = textconv.load_rules(COCCI / "scripts.rules")
    problems = completeness(repo, before.ident, rules)
    problems += textconv.bare_default_namespaces(root,
                                                 default_ns_files(repo))
    names = before.names()
    files = git_grep(repo, names)
    count = sum(1 for f in files if textconv.PROSE_OR_C.search(f)
                for _ in sites.find_sites(f, macros.read_text(root / f),
                                          before.ident))
    rechanged: list[str] = []
    c_files = git_grep(repo, names, "*.c", "*.h")
    if c_files:
        res = run_spatch(ns_string_spatch(spatch_bin, version, names), root,
                         c_files, cache, jobs)
        rechanged = list(res.changed)
        problems.extend(f"{f}: spatch failed: {why}" for f, why in res.failed)
        if rechanged:
            repo.git("checkout", "-q", "--", *rechanged)
    return CheckReport(problems, rechanged, count, len(files))
