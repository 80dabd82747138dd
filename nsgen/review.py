"""What a reviewer of the series needs: which hunks of a generated commit are
mechanical (and can be trusted) and whom to Cc.

A hunk is mechanical when each removed line becomes its added line by the
conversion's own edits only: a namespace identifier becomes the same
identifier in quotes (FOO -> "FOO"), or a stringified macro parameter
stops being stringified (#ns -> ns, __stringify(ns) -> ns).  Everything else
is "other" and listed in the cover letter by file and line.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Iterable

from .run import run
from .tree import Repo

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
TOKEN = re.compile(r"""[A-Za-z_]\w*|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'"""
                   r"""|\s+|\#\#|.""")
IDENT = re.compile(r"[A-Za-z_]\w*")


class Kind(Enum):
    MECHANICAL = "mechanical"
    OTHER = "other"


@dataclass(frozen=True)
class Hunk:
    """One hunk of a diff with no context lines (git diff -U0)."""
    path: str
    old_start: int
    new_start: int
    removed: tuple[str, ...]
    added: tuple[str, ...]

    @property
    def line(self) -> int:
        """Where a reader finds the hunk: its first line in the new file
        (the line before it when the hunk only removes lines)."""
        return max(self.new_start, 1)


def parse_hunks(diff: str) -> list[Hunk]:
    """The hunks of a unified diff written with --unified=0."""
    hunks: list[Hunk] = []
    path = ""
    old_path = ""
    cur: tuple[int, int] | None = None
    removed: list[str] = []
    added: list[str] = []

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            hunks.append(Hunk(path or old_path, cur[0], cur[1],
                              tuple(removed), tuple(added)))
        cur = None
        removed.clear()
        added.clear()

    for line in diff.splitlines():
        if line.startswith("diff --git "):
            flush()
            path = old_path = ""
        elif cur is None and line.startswith("--- "):
            old_path = line[4:].removeprefix("a/") if line[4:] != "/dev/null" else ""
        elif cur is None and line.startswith("+++ "):
            path = line[4:].removeprefix("b/") if line[4:] != "/dev/null" else ""
        elif line.startswith("@@"):
            flush()
            m = HUNK_HEADER.match(line)
            if m:
                cur = (int(m.group(1)), int(m.group(3)))
        elif cur is not None and line.startswith("-"):
            removed.append(line[1:])
        elif cur is not None and line.startswith("+"):
            added.append(line[1:])
    flush()
    return hunks


def tokens(line: str) -> list[str]:
    return TOKEN.findall(line)


def _skip_space(toks: list[str], i: int) -> int:
    while i < len(toks) and toks[i].isspace():
        i += 1
    return i


def line_is_mechanical(old: str, new: str) -> bool:
    """Does new follow from old by the conversion's edits alone (at least
    one of them)?"""
    a, b = tokens(old), tokens(new)
    i = j = 0
    edits = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            i += 1
            j += 1
            continue
        # FOO -> "FOO"
        if IDENT.fullmatch(a[i]) and b[j] == f'"{a[i]}"':
            i, j, edits = i + 1, j + 1, edits + 1
            continue
        # #ns -> ns (a stringified parameter; ## is one token, never this)
        if a[i] == "#":
            k = _skip_space(a, i + 1)
            if k < len(a) and IDENT.fullmatch(a[k]) and a[k] == b[j]:
                i, j, edits = k + 1, j + 1, edits + 1
                continue
        # __stringify(ns) -> ns
        if a[i] == "__stringify":
            k = _skip_space(a, i + 1)
            if k < len(a) and a[k] == "(":
                k = _skip_space(a, k + 1)
                if k < len(a) and IDENT.fullmatch(a[k]) and a[k] == b[j]:
                    m = _skip_space(a, k + 1)
                    if m < len(a) and a[m] == ")":
                        i, j, edits = m + 1, j + 1, edits + 1
                        continue
        return False
    return i == len(a) and j == len(b) and edits > 0


def classify(hunk: Hunk) -> Kind:
    if not hunk.removed or len(hunk.removed) != len(hunk.added):
        return Kind.OTHER
    pairs = list(zip(hunk.removed, hunk.added))
    if all(o == n or line_is_mechanical(o, n) for o, n in pairs) and \
            any(o != n for o, n in pairs):
        return Kind.MECHANICAL
    return Kind.OTHER


@dataclass
class CommitReview:
    subject: str
    hunks: list[Hunk] = field(default_factory=list)
    others: list[Hunk] = field(default_factory=list)

    @property
    def mechanical(self) -> int:
        return len(self.hunks) - len(self.others)


def review_diff(subject: str, diff: str) -> CommitReview:
    r = CommitReview(subject, parse_hunks(diff))
    r.others = [h for h in r.hunks if classify(h) is Kind.OTHER]
    return r


def review_commit(repo: Repo, rev: str) -> CommitReview:
    subject = repo.git("log", "-1", "--format=%s", rev).strip()
    diff = repo.git("show", "--format=", "--unified=0", "--no-color",
                    "--no-ext-diff", rev)
    return review_diff(subject, diff)


def review_text(reviews: list[CommitReview]) -> str:
    """The cover letter's account of the generated commits' hunks."""
    lines = []
    for r in reviews:
        n = len(r.hunks)
        lines.append(f"    {r.subject}: {n} hunk{'s' if n != 1 else ''}, "
                     f"{r.mechanical} mechanical, {len(r.others)} to read"
                     f"{':' if r.others else ''}")
        lines.extend(f"      {h.path}:{h.line}" for h in r.others)
    return "\n".join(lines)


# get_maintainer.pl ---------------------------------------------------------

GET_MAINTAINER = "scripts/get_maintainer.pl"
GM_OPTIONS = ("--nogit", "--nogit-fallback", "--nokeywords")
ROLE = re.compile(r"^(?P<who>.*?)\s+\((?P<role>[^():]*)(?::(?P<section>.*))?\)$")


@dataclass
class Maintainers:
    """get_maintainer.pl's answers for the touched files."""
    per_file: dict[str, list[str]]
    lists: dict[str, int] = field(default_factory=dict)   # list -> files
    people: dict[str, int] = field(default_factory=dict)  # person -> files

    @classmethod
    def of(cls, per_file: dict[str, list[str]]) -> "Maintainers":
        m = cls(per_file)
        for f in sorted(per_file):
            seen: set[str] = set()
            for line in per_file[f]:
                match = ROLE.match(line.strip())
                if not match:
                    continue
                who, role = match.group("who"), match.group("role")
                if who in seen:
                    continue
                seen.add(who)
                bucket = m.lists if "list" in role else m.people
                bucket[who] = bucket.get(who, 0) + 1
        return m


TYPE_LINE = re.compile(r"^([A-Z]):\s*(.*)")
# Where a MAINTAINERS file pattern stops being literal text (get_maintainer.pl
# turns * and ? into regular expressions and matches them at the start).
PATTERN_META = re.compile(r"[*?\[\](){}|+^$\\]")


def maintainers_sections(text: str) -> list[list[str]]:
    """MAINTAINERS as get_maintainer.pl reads it, in blocks: a section's
    title line(s) and its type lines (blank and # lines belong to none).
    The text before the first section is a block without type lines."""
    blocks: list[list[str]] = [[]]
    in_types = False
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        typed = TYPE_LINE.match(line) is not None
        if not typed and in_types:
            blocks.append([])
        blocks[-1].append(line)
        in_types = typed
    return blocks


class Sections:
    """MAINTAINERS read once, each section with what can make it concern
    a file: an N: regular expression (any file), or an F: pattern whose
    literal start is the start of the file's path.  The text before the
    first section is kept with every file."""

    def __init__(self, text: str) -> None:
        self.blocks: list[tuple[str, bool, list[str]]] = []
        for block in maintainers_sections(text):
            typed = [m for m in map(TYPE_LINE.match, block) if m]
            always = not typed or any(m.group(1) == "N" for m in typed)
            starts = [PATTERN_META.split(m.group(2).strip(), 1)[0]
                      for m in typed if m.group(1) == "F"]
            self.blocks.append(("\n".join(block), always, starts))

    def trim(self, files: list[str]) -> str:
        """The sections that can concern any of files, in their order."""
        ordered = sorted(set(files))

        def reaches(start: str) -> bool:
            i = bisect.bisect_left(ordered, start)
            return i < len(ordered) and ordered[i].startswith(start)

        kept = [text for text, always, starts in self.blocks
                if always or any(map(reaches, starts))]
        return "\n\n".join(kept) + "\n"

    def key(self, files: list[str]) -> str:
        """A digest of trim(files): get_maintainer.pl's answer for these
        files changes only with it (and with the script)."""
        return hashlib.sha256(self.trim(files).encode(
            errors="surrogateescape")).hexdigest()[:20]


def trim_maintainers(text: str, files: list[str]) -> str:
    """MAINTAINERS without the sections that cannot concern any of files.

    get_maintainer.pl compares every file with every section (about 0.1 s
    a file on a kernel's MAINTAINERS); a section can concern a file only
    through an N: regular expression or an F: pattern whose literal start
    is the start of the file's path, so only those sections are kept, in
    their order.  get_maintainer.pl still decides which of them match:
    its answer is the same with this file as with the whole one."""
    return Sections(text).trim(files)


def maintainers_file(root: Path, mfile: Path | None = None) -> Path:
    """The MAINTAINERS get_maintainer.pl reads: the tree's, or mfile (a
    newer one the user names: an old stable tree's is out of date)."""
    return mfile if mfile is not None else root / "MAINTAINERS"


def _gm_view(root: Path, cache: Path, mfile: Path | None = None) -> Path:
    """The tree as get_maintainer.pl is run in: a directory of links to
    each of root's entries but .git.  In a git work tree the script runs
    'git ls-files FILE' for every file it is asked about (a warning when
    the file is not tracked, nothing else with --nogit), which costs more
    than its answer."""
    view = cache / f"tree-view-{os.getpid()}-{threading.get_ident()}"
    if view.exists():
        shutil.rmtree(view)
    view.mkdir(parents=True)
    for entry in sorted(root.iterdir()):
        if entry.name != ".git":
            target = maintainers_file(root, mfile) \
                if entry.name == "MAINTAINERS" else entry
            (view / entry.name).symlink_to(target.resolve())
    return view


def ask_get_maintainer(root: Path, files: list[str], cache: Path,
                       mfile: Path | None = None) -> list[str]:
    """scripts/get_maintainer.pl -f F1 -f F2 ... in root: its lines.

    Perl's hash order is fixed (PERL_HASH_SEED=0): with the order it picks
    at random, sections that match a file equally well come out in another
    order from one run to the next, and with them which of a person's
    sections their line names.  Where the script takes --mpath, it reads
    MAINTAINERS without the sections that cannot concern these files
    (trim_maintainers())."""
    view = _gm_view(root, cache, mfile)
    try:
        options = list(GM_OPTIONS)
        script = (root / GET_MAINTAINER).read_text(errors="replace")
        if "mpath|maintainer-path" in script:
            trimmed = view.with_name(view.name + ".MAINTAINERS")
            trimmed.write_text(trim_maintainers(
                maintainers_file(root, mfile).read_text(
                    errors="surrogateescape"),
                files), errors="surrogateescape")
            options += ["--mpath", str(trimmed)]
        args = [a for f in files for a in ("-f", f)]
        return run(["perl", GET_MAINTAINER, *options, *args], cwd=view,
                   timeout=1800, env={"LC_ALL": "C", "PERL_HASH_SEED": "0",
                                      "PERL_PERTURB_KEYS": "0"}
                   ).stdout.splitlines()
    finally:
        view.with_name(view.name + ".MAINTAINERS").unlink(missing_ok=True)
        shutil.rmtree(view)


def _gm_key(root: Path) -> str:
    """What get_maintainer.pl's answers depend on besides MAINTAINERS: the
    script, how it is run, and the tree's .mailmap (which it reads to name
    people)."""
    h = hashlib.sha256()
    for path in (root / GET_MAINTAINER, root / ".mailmap"):
        h.update(path.read_bytes() if path.is_file() else b"-")
    h.update(" ".join(GM_OPTIONS).encode())
    h.update(b"PERL_HASH_SEED=0")   # how ask_get_maintainer() runs it
    return h.hexdigest()[:20]


def _sections(root: Path, mfile: Path | None) -> Sections:
    return Sections(maintainers_file(root, mfile).read_text(
        encoding="utf-8", errors="surrogateescape"))


def _save(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=0))
    tmp.replace(path)


def get_maintainers(root: Path, files: list[str], cache: Path,
                    jobs: int, mfile: Path | None = None
                    ) -> Maintainers | None:
    """get_maintainer.pl -f FILE for each file, run in root.

    Answers are cached in cache/, each file's under the sections of
    MAINTAINERS that can concern it (Sections.key) and the script: the
    next point release asks again only for files it adds or whose
    sections changed.  None when the tree has no MAINTAINERS or no
    get_maintainer.pl.
    """
    if not maintainers_file(root, mfile).is_file() or \
            not (root / GET_MAINTAINER).is_file():
        return None
    path = cache / f"get_maintainer-{_gm_key(root)}.json"
    known: dict[str, list[str]] = {}
    if path.is_file():
        known = json.loads(path.read_text())
    # a file the series deletes has no maintainers to ask about
    files = [f for f in files if (root / f).is_file()]
    sections = _sections(root, mfile)
    keys = {f: f"{f} {sections.key([f])}" for f in files}
    todo = sorted({f for f in files if keys[f] not in known})

    def ask(f: str) -> tuple[str, list[str]]:
        return f, ask_get_maintainer(root, [f], cache, mfile)

    if todo:
        try:
            with ThreadPoolExecutor(max(jobs, 1)) as pool:
                for f, lines in pool.map(ask, todo):
                    known[keys[f]] = lines
        finally:    # keep what was asked, even when one file fails
            _save(path, known)
    return Maintainers.of({f: known[keys[f]] for f in files})


def get_maintainers_union(root: Path, files: list[str], cache: Path,
                          jobs: int, mfile: Path | None = None
                          ) -> list[str] | None:
    """get_maintainer.pl -f F1 -f F2 ... over many files at once: who is
    responsible for any of them, with the section of each (one run per
    chunk, a chunk per job; its cost is matching each file, not starting).

    Cached in cache/ by the list of files, the sections of MAINTAINERS
    that can concern them and the script.  None when the tree has no
    get_maintainer.pl."""
    if not maintainers_file(root, mfile).is_file() or \
            not (root / GET_MAINTAINER).is_file():
        return None
    files = sorted(f for f in set(files) if (root / f).is_file())
    key = hashlib.sha256(("\n".join(files) + "\0" + _sections(
        root, mfile).key(files)).encode()).hexdigest()[:20]
    path = cache / f"get_maintainer-union-{_gm_key(root)}-{key}.json"
    if path.is_file():
        return list(json.loads(path.read_text()))
    n = max(1, min(jobs, len(files)))
    size = -(-len(files) // n)
    chunks = [files[i:i + size] for i in range(0, len(files), size)]

    def ask(chunk: list[str]) -> list[str]:
        return ask_get_maintainer(root, chunk, cache, mfile)

    with ThreadPoolExecutor(n) as pool:
        lines = merge_answers(*pool.map(ask, chunks))
    _save(path, lines)
    return lines


def merge_answers(*answers: Iterable[str]) -> list[str]:
    """get_maintainer.pl's lines of several runs, each person or list once
    (the first line that names them)."""
    lines: list[str] = []
    seen: set[str] = set()
    for answer in answers:
        for line in answer:
            m = ROLE.match(line.strip())
            who = m.group("who") if m else line
            if who not in seen:
                seen.add(who)
                lines.append(line.strip())
    return lines


def by_section(lines: list[str]) -> dict[str, list[str]]:
    """get_maintainer.pl's lines grouped by MAINTAINERS section: section ->
    'who (role)'; entries without a section under ''."""
    found: dict[str, list[str]] = {}
    for line in lines:
        m = ROLE.match(line.strip())
        if not m:
            continue
        role, section = m.group("role"), (m.group("section") or "").strip()
        found.setdefault(section, []).append(f"{m.group('who')} ({role})")
    return found


def union_text(lines: list[str] | None, nfiles: int) -> str:
    """The cover letter's 'who to ask', by section, from a union run."""
    if lines is None:
        return (f"  {GET_MAINTAINER} or MAINTAINERS is missing from the "
                "tree: no Cc list")
    out = [f"  {nfiles} files; by MAINTAINERS section:"]
    for section, who in sorted(by_section(lines).items()):
        out.append(f"    {section or '(every file)'}:")
        out += [f"      {w}" for w in who]
    return "\n".join(out)
