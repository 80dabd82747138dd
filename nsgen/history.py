"""The versions of the series, per kernel line, and what changed between
two of them.

'generate' records each series it writes (not make check's scratch runs)
in a history directory beside the trees' work directories
(WORKDIR/history): the mails and what they were made from
(LINE/vN/meta.json), and the commits themselves in a bare git repository
(history/objects.git) that the trees' snapshots share objects with: the
baseline of the next point release borrows them (git alternates), and the
objects of a recorded series are hard-linked into the history, so that
cleaning a tree's work directory or unpacking another loses nothing.
Each version is an annotated tag sent/ns-series-LINE-vN there, with
base-commit: and change-id: in its message, as b4 writes them.

A new series for a line is the next version, unless its patches have the
same 'git patch-id --stable' as the last one: then it is that version
again, said so, and nothing is recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import guard
from .run import ToolError, run
from .tree import GIT_ENV, GIT_OVERRIDES, Repo

STORE = "objects.git"
INFO = ".ns-series.json"        # beside the mails of every series written
RANGE_DIFF = "range-diff-v{old}-v{new}.txt"


@dataclass
class Version:
    """One series as recorded."""
    line: str                   # N.M
    number: int
    kernel: str                 # how the cover letter names the base
    kernel_version: str         # make kernelversion
    date: str                   # when it was written (UTC)
    change_id: str
    base: str                   # commits, in the history's repository
    head: str
    patch_ids: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    treewide: list[int] = field(default_factory=list)   # 0-based commits
    decisions: dict[str, str] = field(default_factory=dict)
    message_id: str = ""

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Version":
        data: dict[str, Any] = json.loads(text)
        return cls(**data)


def line_of(version: str) -> str:
    """'6.12' of '6.12.118'."""
    return ".".join(version.split(".")[:2])


def git(store: Path, *args: str, stdin: str | None = None,
        check: bool = True) -> str:
    """git in the history's repository, with the project's settings."""
    return run([*Repo(store).argv(), *args], env=GIT_ENV, stdin=stdin,
               check=check).stdout


def open_store(history: Path) -> Path:
    """The history's repository, created bare the first time."""
    store = history / STORE
    if not (store / "HEAD").exists():
        history.mkdir(parents=True, exist_ok=True)
        guard.write_marker(history)
        run(["git", *GIT_OVERRIDES, "init", "-q", "--bare", str(store)],
            env=GIT_ENV)
        git(store, "config", "gc.auto", "0")
    return store


DIFF_DRIVER = re.compile(r"^\S+\s+diff=[\w-]+\s*$")


def use_diff_drivers(store: Path, gitattributes: Path) -> None:
    """Give the history's bare repository the tree's diff drivers ('*.[ch]
    diff=cpp': a hunk's heading is its function, not the nearest label),
    in its info/attributes, which git reads without a work tree: the
    range-diff and b4's then show the headings the mails have.  Only
    diff= lines are taken."""
    lines = [x for x in (gitattributes.read_text(errors="replace")
                         .splitlines() if gitattributes.is_file() else [])
             if DIFF_DRIVER.match(x)]
    dest = store / "info" / "attributes"
    text = "".join(f"{x}\n" for x in lines)
    if (dest.read_text() if dest.is_file() else "") != text:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)


def has_commit(store: Path, commit: str) -> bool:
    """The history has commit (peeling it reads the object)."""
    return (store / "HEAD").exists() and git(
        store, "rev-parse", "-q", "--verify", f"{commit}^{{commit}}",
        check=False).strip() != ""


def keep_objects(git_dir: Path, store: Path) -> int:
    """Hard-link the objects of a snapshot repository that the history
    lacks into it (git objects never change: a link is a copy); return
    how many."""
    src, dst = git_dir / "objects", store / "objects"
    n = 0
    for sub in src.iterdir():
        if not (len(sub.name) == 2 or sub.name == "pack"):
            continue
        target = dst / sub.name
        target.mkdir(exist_ok=True)
        have = set(os.listdir(target))
        for f in os.listdir(sub):
            if f in have or f.startswith("tmp"):
                continue
            try:
                os.link(sub / f, target / f)
            except OSError:
                shutil.copy2(sub / f, target / f)
            n += 1
    return n


def versions(history: Path, line: str) -> list[Version]:
    """The recorded versions of a line, oldest first."""
    found = []
    for meta in (history / line).glob("v*/meta.json"):
        found.append(Version.from_json(meta.read_text()))
    return sorted(found, key=lambda v: v.number)


WORKDIR_NOTE = "workdir"       # history/LINE/workdir


def last_workdir(history: Path, line: str) -> Path | None:
    """The work directory of the line's last series (written or not as a
    new version): the next point release's run takes its work tree."""
    note = history / line / WORKDIR_NOTE
    if not note.is_file():
        return None
    return Path(note.read_text().strip() or ".")


def note_workdir(history: Path, line: str, workdir: Path) -> None:
    note = history / line / WORKDIR_NOTE
    note.parent.mkdir(parents=True, exist_ok=True)
    tmp = note.with_name(f"{note.name}.tmp{os.getpid()}")
    tmp.write_text(f"{workdir.resolve()}\n")
    tmp.replace(note)


def read_info(series_dir: Path) -> Version:
    """The version a series directory was written as ('--since DIR')."""
    info = series_dir / INFO
    if not info.is_file():
        raise ToolError(f"--since {series_dir}: not a series generate.py "
                        f"wrote (no {INFO} there)")
    return Version.from_json(info.read_text())


def change_id(line: str, date: str, seed: str) -> str:
    """A change-id as b4 makes them: date, a slug, 12 hex digits."""
    day = re.sub(r"\D", "", date)[:8]
    digest = hashlib.sha256(seed.encode()).hexdigest()[:12]
    return f"{day}-ns-series-{line.replace('.', '-')}-{digest}"


def record(history: Path, store: Path, v: Version, series_dir: Path,
           cover: str) -> Path:
    """Keep v: its mails and meta in history/LINE/vN, a tag for b4."""
    dest = history / v.line / f"v{v.number}"
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(series_dir, tmp)
    (tmp / "meta.json").write_text(v.to_json())
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    git(store, "update-ref", f"refs/ns-series/{v.line}/v{v.number}/base",
        v.base)
    git(store, "tag", "-f", "-a", "-F", "-", tag_name(v), v.head,
        stdin=f"{cover.rstrip()}\n\nbase-commit: {v.base}\n"
        f"change-id: {v.change_id}\n")
    b4_branch(store, v, cover)
    return dest


B4_MARKER = "--- b4-submit-tracking ---"


def b4_branch(store: Path, v: Version, cover: str) -> str:
    """The branch b4 prep would keep for the line, at version v: the base,
    an empty commit with the cover letter and b4's tracking data (its
    'commit' cover strategy), then the series' commits with the same trees,
    messages and authors.  HEAD names it, so that 'b4 prep --compare-to
    vN-1' run in the history's repository compares v(N-1)'s tag with it."""
    branch = f"b4/ns-series-{v.line}"
    subject = re.search(r"(?m)^Subject: (?:\[[^]]*\] )?(.*)$", cover)
    body = cover.split("\n\n", 1)[1] if "\n\n" in cover else ""
    tracking = {"series": {"revision": v.number, "change-id": v.change_id,
                           "base-branch": None, "prefixes": []}}
    message = (f"{subject.group(1) if subject else 'ns-series'}\n\n"
               f"{body.strip()}\n\n{B4_MARKER}\n"
               "# Written by ns-series (generate.py) as b4 prep keeps it.\n"
               f"{json.dumps(tracking, indent=2)}\n")
    base_tree = git(store, "rev-parse", f"{v.base}^{{tree}}").strip()
    env_of = "%an%x00%ae%x00%aD%x00%cn%x00%ce%x00%cD"
    first = git(store, "log", "-1", f"--format={env_of}", v.head).split("\0")
    parent = commit_tree(store, base_tree, v.base, message, first)
    for c in git(store, "rev-list", "--reverse",
                 f"{v.base}..{v.head}").split():
        who = git(store, "log", "-1", f"--format={env_of}", c).split("\0")
        msg = git(store, "log", "-1", "--format=%B", c)
        parent = commit_tree(store, git(store, "rev-parse",
                                        f"{c}^{{tree}}").strip(),
                             parent, msg, who)
    git(store, "update-ref", f"refs/heads/{branch}", parent)
    git(store, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    return branch


def commit_tree(store: Path, tree_id: str, parent: str, message: str,
                who: list[str]) -> str:
    an, ae, ad, cn, ce, cd = (x.strip() for x in who[:6])
    return run([*Repo(store).argv(), "commit-tree", tree_id, "-p", parent,
                "-F", "-"], stdin=message,
               env={**GIT_ENV, "GIT_AUTHOR_NAME": an, "GIT_AUTHOR_EMAIL": ae,
                    "GIT_AUTHOR_DATE": ad, "GIT_COMMITTER_NAME": cn,
                    "GIT_COMMITTER_EMAIL": ce,
                    "GIT_COMMITTER_DATE": cd}).stdout.strip()


def tag_name(v: Version) -> str:
    """The tag b4 prep --compare-to vN looks for on a branch
    b4/ns-series-LINE."""
    return f"sent/ns-series-{v.line}-v{v.number}"


# --- what changed ------------------------------------------------------------

PART = re.compile(r" \(\d+/\d+\)$")


def family(subject: str) -> str:
    """A patch's subject without the part number of a conversion that
    comes in parts."""
    return PART.sub("", subject)


def _file_diffs(store: Path, commits: list[str]
                ) -> tuple[dict[str, str], dict[str, str]]:
    """file -> its diff in commits, blob ids and the hunks' function
    headings taken out: (with the hunks' line numbers taken out too, with
    them)."""
    out: dict[str, str] = {}
    where: dict[str, str] = {}
    for c in commits:
        text = git(store, "show", "--format=", "--no-renames", c)
        for chunk in re.split(r"(?m)^(?=diff --git )", text):
            m = re.match(r"diff --git a/(\S+) ", chunk)
            if not m:
                continue
            # (a hunk's function heading is no part of the change: it
            # follows the diff drivers of use_diff_drivers(), the newest
            # tree's, and a renamed label above a hunk can move it)
            lines = [re.sub(r"^(@@ [^@]* @@).*", r"\1", x)
                     for x in chunk.splitlines()
                     if not x.startswith("index ")]
            body = "\n".join(re.sub(r"^@@ [^@]* @@", "@@", x)
                             for x in lines)
            out[m.group(1)] = out.get(m.group(1), "") + body
            where[m.group(1)] = where.get(m.group(1), "") + "\n".join(lines)
    return out, where


@dataclass
class Delta:
    """v(N-1) -> vN, for the cover letter and the patches' notes."""
    old: Version
    new: Version
    steps: list[str]                     # 'STEP: old -> new'
    patches: list[tuple[str, str]]       # (subject family, how)
    new_files: list[str]
    gone_files: list[str]
    changed_files: list[str]
    notes: dict[int, str]                # new commit index -> its note
    moved: int = 0      # converted files with the same hunks at other lines


def compare(store: Path, old: Version, new: Version,
            new_commits: list[str]) -> Delta:
    """What changed from old to new (new's commits in order)."""
    steps = [f"{s}: {old.decisions.get(s, 'not in the series')} -> {d}"
             for s, d in new.decisions.items()
             if old.decisions.get(s) != d]
    steps += [f"{s}: {d} -> not in the series"
              for s, d in old.decisions.items() if s not in new.decisions]
    old_commits = git(store, "rev-list", "--reverse",
                      f"{old.base}..{old.head}").split()
    by_family: dict[str, list[int]] = {}
    for i, s in enumerate(old.subjects):
        by_family.setdefault(family(s), []).append(i)
    patches: list[tuple[str, str]] = []
    notes: dict[int, str] = {}
    seen: set[str] = set()
    tw_old = [old_commits[i] for i in old.treewide]
    tw_new = [new_commits[i] for i in new.treewide]
    (a, at_a), (b, at_b) = _file_diffs(store, tw_old), \
        _file_diffs(store, tw_new)
    new_files = sorted(set(b) - set(a))
    gone_files = sorted(set(a) - set(b))
    changed_files = sorted(f for f in set(a) & set(b) if a[f] != b[f])
    moved = sum(1 for f in set(a) & set(b)
                if a[f] == b[f] and at_a[f] != at_b[f])
    for i, s in enumerate(new.subjects):
        fam = family(s)
        if fam in seen:
            continue
        seen.add(fam)
        mine = [j for j, t in enumerate(new.subjects) if family(t) == fam]
        theirs = by_family.get(fam, [])
        if not theirs:
            patches.append((fam, "new"))
            continue
        if [new.patch_ids[j] for j in mine] == \
                [old.patch_ids[j] for j in theirs]:
            patches.append((fam, "unchanged"))
            continue
        if i in new.treewide:
            note = (f"{files_n(len(new_files))} newly converted, "
                    f"{len(gone_files)} no longer touched, "
                    f"{len(changed_files)} with other hunks (the files are "
                    "listed in the cover letter)")
            how = "changed: " + note.split(" (")[0]
        else:
            fa = _file_diffs(store, [old_commits[j] for j in theirs])[0]
            fb = _file_diffs(store, [new_commits[j] for j in mine])[0]
            files = sorted(f for f in set(fa) | set(fb)
                           if fa.get(f) != fb.get(f))
            how = "changed in " + ", ".join(files)
            note = f"hunks changed in {', '.join(files)}"
        patches.append((fam, how))
        for j in mine:
            notes[j] = note
    for fam in by_family:
        if fam not in seen:
            patches.append((fam, "dropped"))
    return Delta(old, new, steps, patches, new_files, gone_files,
                 changed_files, notes, moved)


def files_n(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def range_diff(store: Path, old: Version, new: Version) -> str:
    """git range-diff of the two versions (the complete one)."""
    return git(store, "range-diff", "--no-color",
               f"{old.base}..{old.head}", f"{new.base}..{new.head}")


def changes_text(d: Delta, range_diff_name: str) -> str:
    """'Changes since vN-1' for the cover letter: short and exact."""
    o, n = d.old, d.new
    lines = [f"Changes since v{o.number} ({o.kernel}, dated {o.date}"
             + (f", <{o.message_id}>" if o.message_id else "") + "):", "",
             f"  Base: {o.kernel_version} -> {n.kernel_version}"
             f" ({n.kernel})."]
    if d.steps:
        lines += ["", "  Decisions that changed:"]
        lines += [f"    {s}" for s in d.steps]
    else:
        lines += ["", "  Every step decided as in v{0}.".format(o.number)]
    lines += ["", "  Patches:"]
    lines += [f"    {how}: {fam}" for fam, how in d.patches]
    if d.new_files or d.gone_files or d.changed_files or d.moved:
        lines += ["", "  The conversion, by file:"]
        for title, files in (("newly converted", d.new_files),
                             ("no longer touched", d.gone_files),
                             ("other hunks", d.changed_files)):
            if files:
                lines.append(f"    {title} ({len(files)}):")
                lines += [f"      {f}" for f in files]
        if d.moved:
            lines.append(f"    the same hunks at other lines: "
                         f"{files_n(d.moved)}, not listed (upstream "
                         "changed them elsewhere)")
    lines += ["", f"  git range-diff of v{o.number} and v{n.number}, whole: "
              f"{range_diff_name} beside this series."]
    return "\n".join(lines)
