"""The treewide commit's recipe: a shell script in its message that a
maintainer runs on the parent commit, without this project, to get the
same tree byte for byte.

The generator's ns-string step does three things in order: it quotes
DEFAULT_SYMBOL_NAMESPACE where it is bare, runs spatch on every C file
that names a namespace macro, and then edits what spatch does not reach
(comments, documentation, the macros' definitions, scripts).  The recipe
does the same: the first and the last as sed commands, one per changed
line, written from the trees the step left (so they are the step's edits,
not a second implementation of them), and spatch with the rules written
out inline.  A change that is not line for line (lines added or removed)
goes in as a diff for git apply.
"""

from __future__ import annotations

import difflib
import re
import shlex

from .tree import Repo

START = "#!/bin/sh -e"
END = "# end of the recipe"
WORD = re.compile(r"\w")


def _bre(text: str) -> str:
    """text as a sed basic regular expression that matches it literally."""
    return re.sub(r"([\\.*\[\]^$/])", r"\\\1", text)


def _repl(text: str) -> str:
    """text as a sed replacement."""
    return re.sub(r"([\\&/])", r"\\\1", text)


def _span(old: str, new: str) -> tuple[int, int, int]:
    """Where old and new differ: start, end in old, end in new, widened
    to whole words and to a span whose first match in old is its own."""
    p = 0
    while p < min(len(old), len(new)) and old[p] == new[p]:
        p += 1
    s = 0
    while (s < min(len(old), len(new)) - p
           and old[len(old) - 1 - s] == new[len(new) - 1 - s]):
        s += 1
    start, oend, nend = p, len(old) - s, len(new) - s
    while start > 0 and WORD.match(old[start - 1]):
        start -= 1
    while oend < len(old) and WORD.match(old[oend]):
        oend += 1
        nend += 1
    if oend == start or old.find(old[start:oend]) != start:
        return 0, len(old), len(new)
    return start, oend, nend


def line_command(n: int, old: str, new: str) -> str:
    """The sed command that turns line n from old into new."""
    start, oend, nend = _span(old, new)
    if (start, oend) == (0, len(old)):
        return f"{n}s/^{_bre(old)}$/{_repl(new)}/"
    return f"{n}s/{_bre(old[start:oend])}/{_repl(new[start:nend])}/"


def file_commands(old: str, new: str) -> list[str] | None:
    """sed commands that turn the text old into new (a line changed is an
    s command, a line removed a d command, each addressed by its number in
    old), or None when the change adds lines."""
    a, b = old.split("\n"), new.split("\n")
    cmds = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
            None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if j2 - j1 > i2 - i1:
            return None
        cmds += [line_command(i1 + k + 1, a[i1 + k], b[j1 + k])
                 for k in range(j2 - j1)]
        cmds += [f"{i1 + k + 1}d" for k in range(j2 - j1, i2 - i1)]
    return cmds


def edits(repo: Repo, before: str, after: str) -> list[str]:
    """Shell lines that turn the tree before into the tree after (two
    tree ids of repo): sed per file, a git apply here-document where a
    file gains lines."""
    out = []
    names = repo.git("diff", "--name-only", "--no-renames", before,
                     after).split()
    for path in names:
        old = repo.git("cat-file", "blob", f"{before}:{path}")
        new = repo.git("cat-file", "blob", f"{after}:{path}")
        cmds = file_commands(old, new)
        if cmds is None:
            diff = repo.git("diff", "--no-renames", before, after, "--", path)
            out += ["git apply <<'EOF_PATCH'", *diff.rstrip("\n").split("\n"),
                    "EOF_PATCH"]
            continue
        out += command(["sed", "-i"], [w for c in cmds for w in ("-e", c)]
                       + [path])
    return out


# A recipe line and the commit message line it becomes (indented by four)
# stay within checkpatch's 75 columns.
WIDTH = 71
CHUNK = 48


class Shell(str):
    """A word already written for sh (not to be quoted again)."""


def _word(word: str) -> list[str]:
    """word quoted for sh, as one or more lines: a word too long for a line
    is cut into quoted pieces that sh joins again (a backslash-newline
    outside quotes is nothing to it, so each piece starts its line)."""
    if isinstance(word, Shell):
        return [word]
    quoted = shlex.quote(word)
    if len(quoted) <= WIDTH - 4:
        return [quoted]
    pieces = [shlex.quote(word[i:i + CHUNK])
              for i in range(0, len(word), CHUNK)]
    return [p + "\\" for p in pieces[:-1]] + [pieces[-1]]


def command(head: list[str], args: list[str], tail: str = "") -> list[str]:
    """A command as lines of at most WIDTH columns, filled greedily: head's
    words first, then args (an option such as -e or -D with its value);
    tail (a pipe) after the last one."""
    units: list[list[str]] = []
    for w in args:
        if units and units[-1] in (["-e"], ["-D"]):
            units[-1].append(w)
        else:
            units.append([w])
    lines = [" ".join(_word(w)[0] for w in head)]
    for unit in units:
        parts = [p for w in unit for p in _word(w)]
        text = " ".join(parts)
        if len(parts) == len(unit) and \
                len(lines[-1]) + 1 + len(text) + 2 <= WIDTH:
            lines[-1] += " " + text
            continue
        lines[-1] += " \\"
        if len(parts) == len(unit) and len(text) + 4 <= WIDTH:
            lines.append("  " + text)
            continue
        if len(parts) == len(unit):     # the option, then its value
            lines.append("  " + parts[0] + " \\")
            lines.append("  " + " ".join(parts[1:]))
            continue
        # a word cut in pieces: its option ends this line, the pieces
        # start theirs
        for w in unit:
            pieces = _word(w)
            if len(pieces) > 1:
                lines += pieces
            elif len(lines[-1]) + 1 + len(pieces[0]) <= WIDTH:
                lines[-1] = lines[-1][:-2] + " " + pieces[0] + " \\"
            else:
                lines.append("  " + pieces[0] + " \\")
    if tail:
        lines[-1] += " " + tail
    return lines


def script(cocci: str, hints: str, spatch_args: list[str],
           names: list[str], before: list[str], after: list[str]) -> str:
    """The recipe: the rules inline, spatch on the files that name one of
    names, the edits before and after it."""
    lines = [START, "# Run from the top of the tree, on the tree before the",
             "# conversion.",
             'rules=$(mktemp -d)', """trap 'rm -rf "$rules"' EXIT""",
             "cat > \"$rules/ns_string.cocci\" <<'EOF_COCCI'",
             *cocci.rstrip("\n").split("\n"), "EOF_COCCI",
             "cat > \"$rules/ns_string.h\" <<'EOF_HINTS'",
             *hints.rstrip("\n").split("\n"), "EOF_HINTS"]
    if before:
        lines += ["# DEFAULT_SYMBOL_NAMESPACE, where it is bare", *before]
    lines += ["# every C file that names a namespace macro, one spatch each",
              *command(["git", "grep", "-l", "-I", "-w", "-F"],
                       [w for n in sorted(names) for w in ("-e", n)]
                       + ["--", "*.c", "*.h"], "|"),
              *command([Shell('xargs -n 1 -P "$(nproc)"'), "spatch"],
                       ["--sp-file", Shell('"$rules/ns_string.cocci"'),
                        "--macro-file", Shell('"$rules/ns_string.h"'),
                        *spatch_args, "--in-place", "--quiet"])]
    if after:
        lines += ["# what spatch does not reach: definitions, comments,",
                  "# documentation, scripts", *after]
    lines.append(END)
    return as_mailed("\n".join(lines) + "\n")


def as_mailed(text: str) -> str:
    """text as a commit message keeps it through git am (git's message
    cleanup): no trailing whitespace, no run of blank lines.  A recipe
    written so reads the same in the mail and in the commit, and still
    works: blank lines mean nothing to spatch's rules or to sed."""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(
        line.rstrip() for line in text.split("\n")))


def extract(message: str) -> str:
    """The recipe of a commit message (as git log or a mail shows it:
    indented by four spaces)."""
    lines = message.split("\n")
    try:
        first = next(i for i, line in enumerate(lines)
                     if line.strip() == START)
        last = next(i for i in range(first, len(lines))
                    if lines[i].strip() == END)
    except StopIteration:
        raise ValueError("no recipe in this message") from None
    indent = len(lines[first]) - len(lines[first].lstrip())
    return "\n".join(line[indent:] for line in lines[first:last + 1]) + "\n"
