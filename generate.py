#!/usr/bin/env python3
"""Generate the string-namespace / EXPORT_SYMBOL_GPL_FOR patch series.

tree -> git baseline in WORKDIR -> patches/series in order (hand-written
patches with git am, generated steps with spatch) -> out/series/.
The input tree is only read.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import signal
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from nsgen import (abi, convert, drift, guard, history, identity, kbuild, mail,
                   module, results, review, series, spatch, steps, tree,
                   verify)
from nsgen.run import ToolError, progress

PROJECT = Path(__file__).resolve().parent
DEFAULT_WORKDIR = tree.default_workdir()


log = progress

# The hand-written step that keeps external modules building (its name in
# patches/series, without the number).
EXTMOD_STEP = ("-module-let-external-modules-write-a-symbol-namespace-"
               "either-way.patch")


def external_modules_text(decisions: list[steps.Decision]) -> str:
    """What the series means for modules built outside the tree."""
    kinds = {d.kind for d in decisions if d.step.endswith(EXTMOD_STEP)}
    if kinds & {steps.Kind.APPLIES, steps.Kind.DRIFT, steps.Kind.VARIANT}:
        return """Modules built outside the tree (make M=DIR, as DKMS does) keep
building unchanged: they may write a namespace bare, as this kernel
required until now, or as a string, as upstream requires since 6.13,
including the LINUX_VERSION_CODE test that picks one or the other.
Both spellings name the same namespace for modpost, the loader, modinfo
and Module.symvers.  The kernel's own code must write a string literal:
a bare namespace there stops the build, with
__namespace_must_be_a_string_literal among the compiler's notes.  The
generator's "generate.py module DIR" rewrites an external module so that
it builds on kernels before and after the conversion.
"""
    return """Modules built outside the tree: this kernel takes namespaces as
string literals only, as upstream has since 6.13, from external modules
too; the series changes nothing there.
"""


WHO_TO_ASK = "who-to-ask.txt"


def took(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds >= 60 else f"{seconds} s"


def tests_text(checks: "CoverChecks") -> str:
    """The results recorded for this very series, each line or what to
    run for it."""
    lines = [checks.equivalence]
    for kind, what in (("boot-test", "boot test (make boot-test)"),
                       ("check", "every test (make check)")):
        r = checks.results.get(kind)
        if r is None:
            lines.append(f"  - {what}: not run on this series; "
                         "make release runs it")
            continue
        lines.append(textwrap.fill(
            f"- {what}: {r['passed']} passed, {r['failed']} failed on "
            f"{r['kernel']} ({r.get('config', 'x86_64')}; {r['date']}, "
            f"{took(int(r['elapsed']))})", 72, initial_indent="  ",
            subsequent_indent="    ", break_on_hyphens=False))
    return "\n".join(lines)


def cover_text(ksrc: tree.KernelTree, base_desc: str, base: tree.Baseline,
               decisions: list[steps.Decision], spatch_version: str,
               checks: "CoverChecks") -> tuple[str, str]:
    subject = ("module: string symbol namespaces, exports restricted to "
               "modules, GPL offender table")
    lines = []
    for d in decisions:
        where = f" ({d.variant}/)" if d.variant else ""
        lines.append(f"  {d.step}{where}:\n" + textwrap.fill(
            d.line(), 72, initial_indent="    ", subsequent_indent="      ",
            break_long_words=False, break_on_hyphens=False))
    where = (f"git: {ksrc.git.describe()}" if ksrc.git is not None
             else f"the tree as unpacked, git tree {base.tree[:12]}")
    if ksrc.git is not None and ksrc.git.dirty:
        where += (":\n" + "\n".join(f"  {f}" for f in ksrc.git.dirty[:20])
                  + (f"\n  ... and {len(ksrc.git.dirty) - 20} more"
                     if len(ksrc.git.dirty) > 20 else "")
                  + "\nIt applies to that HEAD only with those changes")
    body = f"""Base: {base_desc or 'Linux ' + ksrc.version}, upstream Linux
{ksrc.version} ({where}).

Why: a symbol namespace keeps nothing for one module, since any module
can import any namespace: fpu_swap_kvm_fpstate(), exported for KVM,
is open to every GPL module.  And a module can declare a licence it does
not honour; the loader knows two such modules by hard-coded tests.  Both
were raised in November 2024 (Peter Zijlstra's "[RFC] module: Strict
per-modname namespaces", Uwe Kleine-König's offender array and Tuxedo
block; LWN, "Two approaches to tightening restrictions on loadable
modules").

What: namespaces become C strings, so that an export can name the
modules allowed to use it: EXPORT_SYMBOL_GPL_FOR(sym, "kvm") exports into
the reserved namespace "module:kvm", which the module loader and modpost
enforce.  The loader's GPL-licence offenders become one table, which
gains Tuxedo's modules; names in it compare as module names do.

The rule: a "module:" export goes to a listed module that is in-tree
and, on a kernel with CONFIG_MODULE_SIG, whose signature was made by a
key that is itself in .builtin_trusted_keys.  No certificate carried in
the signature and no keyring link changes that answer.  Without
CONFIG_MODULE_SIG the "intree" tag, which any module can write, is all
there is.  Enforced: load-time linking of ordinary modules and
symbol_get()/symbol_request() from a module's code.  Out of reach:
livepatch relocations (resolved through kallsyms, for any symbol),
kprobes, kallsyms, and code already running in the kernel.

{external_modules_text(decisions)}
Modules signed with another key (a distribution's, a user's Machine
Owner Key as DKMS uses) load as before, without the restricted symbols.

ABI:
{checks.abi}

The series is generated.  The treewide conversion (in parts of under
100 KB where it is larger, each of which builds) carries in its last
message the script that makes all of it, spatch's rules inline; each
step was decided on this tree before it ran:

{chr(10).join(lines)}

Tests of this very series (results recorded for these patches, matched
by git patch-id --stable; none is quoted for other patches):
  - every hand-written patch applied with git am; spatch {spatch_version}
    failed on no file; no bare namespace and no stringifying macro left;
{tests_text(checks)}
  - hunks of the generated commits (git show -U0) that are not a
    namespace quoted or a #ns / __stringify(ns) dropped, to read:
{checks.hunks}

{checks.maintainers}"""
    return subject, body


@dataclass
class CoverChecks:
    """What the cover letter reports about the committed series."""
    equivalence: str
    abi: str
    hunks: str
    maintainers: str                    # the letter's line about who to ask
    who_to_ask: str                     # WHO_TO_ASK beside the series
    results: dict[str, dict[str, object]] = field(default_factory=dict)
    per_file: dict[str, list[str]] | None = None   # get_maintainer.pl
    wide: list[str] | None = None       # its answer for the treewide files


def cover_checks(base: tree.Baseline, workdir: Path,
                 generated: list[str], jobs: int,
                 treewide: list[str], cc_files: list[str],
                 mfile: Path | None = None,
                 cache: Path | None = None) -> CoverChecks:
    """Hunk review of the generated commits, the results recorded for this
    very series (make verify, abi-check, boot-test, check),
    get_maintainer.pl's answers."""
    repo = base.repo
    reviews = [review.review_commit(repo, c) for c in generated]
    files = sorted(set(repo.git("diff", "--name-only", "--no-renames",
                                base.commit, "HEAD").split()))
    def touched(c: str) -> set[str]:
        return set(repo.git("diff-tree", "--no-commit-id", "--name-only",
                            "-r", "--no-renames", c).split())

    commits = repo.git("rev-list", f"{base.commit}..HEAD").split()
    wide = sorted({f for c in treewide for f in touched(c)})
    # Every other patch's files one by one (its To and Cc), and the files
    # that say who the module loader's and kbuild's people are.
    small = sorted({f for c in commits if c not in treewide
                    for f in touched(c)} | {mail.LOADER, mail.MODPOST}
                   | set(cc_files))
    t = time.monotonic()
    cache = cache or workdir / "cache"
    found = review.get_maintainers(base.work, small, cache, jobs, mfile)
    union = review.get_maintainers_union(base.work, wide, cache, jobs,
                                         mfile) if wide else []
    log(f"  get_maintainer.pl on {len(small)} files one by one and "
        f"{len(wide)} at once: {time.monotonic() - t:.1f} s")
    everyone = None
    if found is not None and union is not None:
        everyone = review.merge_answers(union, *(
            found.per_file.get(f, []) for f in small if f in files))
    read = (f"{mfile} (MAINTAINERS=)" if mfile is not None
            else "the MAINTAINERS of this tree")
    who = (f"scripts/get_maintainer.pl --nogit --nogit-fallback "
           f"--nokeywords, reading {read},\nfor the files the series "
           f"touches.\n\n{review.union_text(everyone, len(files))}\n")
    sections = len(review.by_section(everyone or []))
    key = results.key_of_commits(repo, base.commit, "HEAD")
    return CoverChecks(
        verify.cover_lines(workdir, repo), abi.cover_lines(workdir, repo),
        review.review_text(reviews) or "    (no generated commit)",
        textwrap.fill(
            f"Who to ask: the To and Cc of each patch come from "
            f"get_maintainer.pl, which "
            f"read {read}; its answer for all {len(files)} files, by "
            f"MAINTAINERS section ({sections}), is in {WHO_TO_ASK} beside "
            "this series.", 72, break_on_hyphens=False,
            break_long_words=False),
        who, {kind: r for kind in ("boot-test", "check")
              if (r := results.recorded(workdir, kind, key)) is not None},
        found.per_file if found else None, union)


def base_desc(ksrc: tree.KernelTree, given: str) -> str:
    """How the cover letter names the base: --base-desc, else the Debian
    package that setup.sh unpacked the tree from, else make kernelversion."""
    return given or tree.package_of(ksrc) or f"Linux {ksrc.version}"


def positive_int(text: str) -> int:
    """argparse type of --jobs: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number"
                                         ) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: must be 1 or more")
    return n


def _inside(a: Path, b: Path) -> bool:
    """a is b or lies under it."""
    return a == b or b in a.parents


def check_workdir(args: argparse.Namespace, ksrc: tree.KernelTree,
                  create: bool = True) -> Path:
    """The per-tree work directory: apart from the tree, writable."""
    if not str(args.workdir).strip():
        raise ToolError("WORKDIR is empty; give a work directory")
    workdir = Path(args.workdir).absolute()
    if _inside(workdir, ksrc.path):
        raise ToolError(f"WORKDIR={workdir} is inside KSRC={ksrc.path}: the "
                        "input tree is only read; put WORKDIR elsewhere")
    if _inside(ksrc.path, workdir):
        raise ToolError(f"WORKDIR={workdir} contains KSRC={ksrc.path}: a "
                        "tree's work directory must be apart from the tree "
                        "(make names it $WORKDIR/<the tree's directory>; a "
                        "KSRC ending in '/'?)")
    fresh = not workdir.exists() or (workdir.is_dir()
                                     and not any(workdir.iterdir()))
    guard.check_writable(workdir, "WORKDIR", create)
    if create and fresh:
        # made by us: 'make distclean' may remove it (guard.MARKER)
        guard.write_marker(workdir)
    return workdir.resolve() if create else workdir


def check_ksrc(args: argparse.Namespace) -> tree.KernelTree:
    if not str(args.ksrc).strip():
        raise ToolError("KSRC is empty; point KSRC at a kernel source tree")
    return tree.check_tree(Path(args.ksrc),
                           getattr(args, "allow_dirty", False))


@dataclass(frozen=True)
class Inputs:
    """Everything generate needs from its arguments, checked before any
    slow step, in this one place."""
    ksrc: tree.KernelTree
    workdir: Path
    out: Path                  # OUT/series
    order_file: Path
    order: list[series.Entry]
    spatch_version: str
    sender: identity.Sender
    date: str
    date_from: str
    maintainers: Path | None = None    # --maintainers, else the tree's
    history: Path | None = None        # where versions are kept; None: not
    since: history.Version | None = None   # --since DIR
    in_reply_to: str = ""              # the Message-ID of the last version


def check_generate(args: argparse.Namespace) -> Inputs:
    create = not args.dry_run
    ksrc = check_ksrc(args)
    order_file = Path(args.series_file)
    if not order_file.is_file():
        raise ToolError(f"--series-file {order_file}: no such file")
    order = series.read_order(order_file, set(convert.STEPS))
    version = spatch.find_spatch(args.spatch)
    sender = identity.resolve(args.author, Path.cwd())
    date, date_from = identity.input_date(ksrc.path, args.date)
    hist = None if args.history == "" else \
        Path(args.history or Path(args.workdir).absolute().parent
             / "history").absolute()
    since = None
    if args.since:
        since = history.read_info(Path(args.since))
        line = history.line_of(ksrc.version)
        if since.line != line:
            raise ToolError(f"--since {args.since}: a series for Linux "
                            f"{since.line} ({since.kernel}); this tree is "
                            f"{line} ({ksrc.version}): compare within a line")
        store = (hist or Path(args.since)) / history.STORE
        if hist is None or not history.has_commit(store, since.head):
            raise ToolError(f"--since {args.since}: its commits are not in "
                            f"the history ({store}): only a series that "
                            "make/generate recorded can be compared with")
    workdir = check_workdir(args, ksrc, create)
    if not str(args.out).strip():
        raise ToolError("OUT is empty; give an output directory")
    out = Path(args.out).absolute()
    if _inside(out, ksrc.path):
        raise ToolError(f"OUT={out} is inside KSRC={ksrc.path}: the input "
                        "tree is only read; put OUT elsewhere")
    guard.check_writable(out, "OUT", create)
    series_dir = out / "series"
    guard.check_series_dir(series_dir)
    mfile = None
    if args.maintainers:
        mfile = Path(args.maintainers).resolve()
        if not mfile.is_file() or "\nF:" not in mfile.read_text(
                errors="replace"):
            raise ToolError(f"MAINTAINERS={args.maintainers}: not a "
                            "MAINTAINERS file (no F: lines)")
    return Inputs(ksrc, workdir, series_dir, order_file, order, version,
                  sender, date, date_from, mfile, hist, since,
                  message_id_of(args.in_reply_to))


def message_id_of(given: str) -> str:
    """--in-reply-to: a Message-ID, or a mail or mbox of the last version
    as sent, whose cover letter's (else first) Message-ID is taken."""
    if not given:
        return ""
    path = Path(given)
    if not path.is_file():
        mid = given.strip().strip("<>")
        if not re.fullmatch(r"[^\s<>@]+@[^\s<>@]+", mid):
            raise ToolError(f"--in-reply-to {given}: neither a Message-ID "
                            "nor a file")
        return mid
    text = path.read_text(errors="replace")
    found = re.findall(r"(?ims)^subject:(.*?)\n(?![ \t]).*?^message-id:"
                       r"\s*<([^>]+)>", text) or []
    ids = re.findall(r"(?im)^message-id:\s*<([^>]+)>", text)
    if not ids:
        raise ToolError(f"--in-reply-to {given}: no Message-ID in it")
    cover = [m for subj, m in found if re.search(r"\b0+/\d+\]", subj)]
    return cover[0] if cover else ids[0]


def dry_run(i: Inputs) -> int:
    """The commands a real run executes, from the same builders; values
    known only while it runs are named in capitals (BASELINE, TMP)."""
    git_dir = i.workdir / "baseline.git"
    snap = tree.snapshot_repo(i.ksrc, git_dir, write=False)
    print("# snapshot of KSRC (the input tree is only read)")
    print(shlex.join([*snap.argv(), *tree.add_command(i.ksrc.git is None),
                      "--", "."]))
    work = tree.Repo(git_dir / "worktrees" / "work", i.workdir / "work")
    if not (i.workdir / "work" / ".git").exists():
        print("# its work tree: the one of the line's last series (in the "
              "work directory history/LINE/workdir names) moved here where "
              "no run holds it, else checked out")
    for e in i.order:
        if e.kind == "patch":
            print(f"# {e.name}: as patches/steps.conf decides on the tree "
                  "(as written, a variant, or already there)")
            print(shlex.join([*work.argv(), *series.am_args(i.sender),
                              str((i.order_file.parent / e.name).resolve())]))
        else:
            print(f"# generated step {e.name}: spatch {i.spatch_version} per "
                  "file (nsgen/convert.py), then git commit-tree")
    print(f"# the series, written to TMP and moved to {i.out}")
    print(shlex.join([*work.argv(), *series.format_patch_args("BASELINE",
                                                              Path("TMP"))]))
    return 0


def run_generate(args: argparse.Namespace) -> int:
    start = time.monotonic()
    i = check_generate(args)
    if args.dry_run:
        return dry_run(i)
    with guard.locked(i.workdir, "WORKDIR", wait=not args.no_wait):
        return generate_locked(args, i, start)


def run_refresh(args: argparse.Namespace) -> int:
    """The refresh tree of a refused step, fixed by hand, becomes the
    step's text for this tree's line; then the series is generated."""
    start = time.monotonic()
    i = check_generate(args)
    names = [e.name for e in i.order if e.kind == "patch"]
    step = [n for n in names if n == args.step
            or n.removesuffix(".patch") == args.step]
    step = step or [n for n in names if n.startswith(args.step)]
    if len(step) != 1:
        raise ToolError(f"refresh {args.step}: "
                        + ("names no hand-written step" if not step else
                           f"names {len(step)} steps") + " of "
                        f"{i.order_file} ({', '.join(names)})")
    if args.dry_run:
        return dry_run(i)
    patch_dir = i.order_file.parent
    with guard.locked(i.workdir, "WORKDIR", wait=not args.no_wait):
        r = drift.refresh(i.workdir, step[0], patch_dir,
                          patch_dir / "steps.conf", args.jobs)
        log(f"refresh: wrote {r.path}"
            + (f" (a new variant {r.new_variant}; steps.conf: "
               + " | ".join(r.probes) + ")" if r.new_variant else
               " (the step's new text)"))
        return generate_locked(args, i, start)


def generate_locked(args: argparse.Namespace, i: Inputs,
                    start: float) -> int:
    ksrc, workdir, out, version = i.ksrc, i.workdir, i.out, i.spatch_version
    order_file, order, sender, date = i.order_file, i.order, i.sender, i.date
    log(f"generate: Linux {ksrc.version} from {ksrc.path}"
        + (f" ({ksrc.git.describe()})" if ksrc.git else ""))
    patch_dir = order_file.parent
    rules = steps.read_rules(patch_dir / "steps.conf")
    steps.check_rules(rules, patch_dir,
                      [e.name for e in order if e.kind == "patch"])
    t = time.monotonic()
    if not (workdir / "baseline.git" / "index").exists():
        log("  first run on this tree: snapshotting it, and checking it "
            "out unless the work tree of the line's last series can be "
            "taken over (up to a minute)")
    cache = Path(args.cache).absolute() if args.cache else workdir / "cache"
    if not cache.exists():      # a shared one: 'make distclean' may remove it
        cache.mkdir(parents=True)
        guard.write_marker(cache)
    store = history.open_store(i.history) if i.history else None
    line = history.line_of(ksrc.version)
    donor = history.last_workdir(i.history, line) if i.history else None
    base = tree.make_baseline(ksrc, workdir,
                              store / "objects" if store else None, donor)
    log(f"  baseline {base.commit[:12]} in {workdir}: "
        f"{time.monotonic() - t:.1f} s"
        + (f" (the work tree of {donor} taken over, only the files that "
           "differ written)" if base.adopted else ""))
    base.repo.env = tree.sender_env(sender.name, sender.email, date)
    log(f"  author {sender.ident()}, date {date} (from {i.date_from})")
    if not sender.signed:
        log(f"generate: warning: {identity.UNSIGNED_NOTE}")
    decisions: list[steps.Decision] = []
    results: list[convert.StepResult] = []
    generated: list[str] = []
    treewide: list[str] = []        # the tree-wide conversion's commit
    cc_files: dict[str, list[str]] = {}     # commit -> files to Cc for
    for e in order:
        t = time.monotonic()
        if e.kind == "patch":
            d = steps.decide(base.repo, patch_dir, e.name, rules.get(e.name))
            decisions.append(d)
            log(f"  {e.name}: {d.line()}")
            if d.kind is steps.Kind.REFUSED:
                hint = refresh_hint(base, workdir, ksrc, d, patch_dir) \
                    if d.fit is not None and (d.fit.failed or d.fit.trouble) \
                    else ""
                raise ToolError(f"{e.name} refused: {d.reason}{hint}")
            if d.patch is not None:
                before = base.repo.git("rev-parse", "HEAD").strip()
                apply_step(base.repo, d, patch_dir, workdir, sender, date)
                log(f"  applied {d.patch.relative_to(patch_dir)}"
                    f"{' with fuzz' if d.fit and d.fit.fuzzed else ''}: "
                    f"{time.monotonic() - t:.1f} s")
            if d.fit is not None and d.fit.fuzzed:
                decisions[-1] = prove_fuzz(base, workdir, ksrc, d,
                                           patch_dir, before, args.jobs)
            continue
        r = convert.run_step(e.name, base.repo, args.spatch, version,
                             args.jobs, cache, args.recompute)
        results.append(r)
        decisions.append(steps.generated_decision(
            r.name, r.status is convert.Status.CHANGED, r.notes))
        if r.status is convert.Status.CHANGED:
            for c in commit_step(base.repo, [(x.message, x.files)
                                             for x in r.parts]
                                 or [(r.message, None)], sender):
                generated.append(c)
                if r.cc_files:
                    cc_files[generated[-1]] = r.cc_files
                if e.name == "ns-string":
                    treewide.append(generated[-1])
        log(f"  generated {e.name}: {r.status.value}, {len(r.files)} files"
            f"{' (' + '; '.join(r.notes) + ')' if r.notes else ''}"
            + ("; replayed: an earlier run's result for this tree and "
               "code" if r.replayed else
               f", {r.cached} spatch results from cache") + ": "
            f"{time.monotonic() - t:.1f} s")
    if all(r.status is convert.Status.NOTHING for r in results):
        log("generate: nothing to convert: the tree already has every "
            "generated change")
    checks = cover_checks(base, workdir, generated, args.jobs, treewide,
                          sorted({f for fs in cc_files.values() for f in fs}),
                          i.maintainers, cache)
    subject, body = cover_text(ksrc, base_desc(ksrc, args.base_desc), base,
                               decisions, version, checks)
    commits = base.repo.git("rev-list", "--reverse",
                            f"{base.commit}..HEAD").split()
    t = time.monotonic()
    if store is not None:       # the history holds the commits it compares
        history.keep_objects(workdir_git(base), store)
        history.use_diff_drivers(store, base.work / ".gitattributes")
    v, delta, same, rdiff = versioning(args, i, base, store, commits,
                                       treewide, decisions)
    log(f"  version v{v.number} of {v.line}"
        + (f": the same patches as v{v.number} (git patch-id --stable), "
           "not a new version" if same else "")
        + (f", compared with v{delta.old.number}" if delta else "")
        + f": {time.monotonic() - t:.1f} s")
    if delta is not None:
        body = history.changes_text(delta, rdiff_name(delta)) + \
            "\n\n" + body
    if not sender.signed:
        body = f"NOT SENDABLE: {identity.UNSIGNED_NOTE}.\n\n{body}"
    body += f"\n\nchange-id: {v.change_id}"

    def mailable(files: list[Path]) -> None:
        (files[0].parent / WHO_TO_ASK).write_text(
            checks.who_to_ask, encoding="utf-8", errors="surrogateescape")
        mail.address_and_thread(files, {commits.index(c) + 1
                                        for c in treewide},
                                checks.per_file, checks.wide, sender.email,
                                {commits.index(c) + 1: fs
                                 for c, fs in cc_files.items()},
                                i.in_reply_to)
        (files[0].parent / history.INFO).write_text(v.to_json())
        if delta is not None:
            (files[0].parent / rdiff_name(delta)).write_text(
                rdiff, encoding="utf-8", errors="surrogateescape")
            for n, note in delta.notes.items():
                add_note(files[n + 1], f"Changes in v{v.number}: {note}")

    extra = [f"--subject-prefix=PATCH v{v.number}"] if v.number > 1 else []
    with guard.locked(out.parent, "OUT", wait=not args.no_wait):
        files = series.format_series(base.repo, base.commit, out, subject,
                                     body, mailable, extra)
    if i.history is not None:
        history.note_workdir(i.history, line, workdir)
    if i.history is not None and store is not None and not same:
        cover = next(f for f in files if f.name.endswith("cover-letter.patch"))
        where = history.record(i.history, store, v, out,
                               cover.read_text(errors="replace"))
        log(f"  recorded v{v.number} of {v.line} in {where} (tag "
            f"{history.tag_name(v)} in {store})")
    for f in files:
        print(f)
    patches = [f for f in files if f.suffix == ".patch"][1:]
    log(f"generate: {len(patches)} patches and a cover letter in {out}: "
        f"{time.monotonic() - start:.1f} s")
    return 0


def rdiff_name(delta: history.Delta) -> str:
    return history.RANGE_DIFF.format(old=delta.old.number,
                                     new=delta.new.number)


def add_note(mail_file: Path, note: str) -> None:
    """A note after a mail's '---' line, where git am drops it."""
    text = mail_file.read_text(encoding="utf-8", errors="surrogateescape")
    head, sep, rest = text.partition("\n---\n")
    if not sep:
        return
    note = textwrap.fill(note, 72, break_on_hyphens=False,
                         break_long_words=False)
    mail_file.write_text(f"{head}{sep}{note}\n\n{rest}", encoding="utf-8",
                         errors="surrogateescape")


def versioning(args: argparse.Namespace, i: Inputs, base: tree.Baseline,
               store: Path | None, commits: list[str], treewide: list[str],
               decisions: list[steps.Decision]
               ) -> tuple[history.Version, history.Delta | None, bool, str]:
    """This series as a version of its line: (the version, what changed
    since the one it is compared with, whether it has the same patches as
    the last one recorded, the complete range-diff)."""
    line = history.line_of(i.ksrc.version)
    ids = [results.patch_id(base.repo.git("show", "--format=",
                                          "--no-renames", c))
           for c in commits]
    subjects = [base.repo.git("log", "-1", "--format=%s", c).strip()
                for c in commits]
    if not commits:         # nothing to convert: no series, no version
        return (history.Version(line, 0, "", i.ksrc.version, i.date, "",
                                base.commit, base.commit), None, True, "")
    known = history.versions(i.history, line) if i.history else []
    last = known[-1] if known else None
    same = i.since is None and last is not None and last.patch_ids == ids
    number = args.reroll_count or (
        last.number if same and last else
        i.since.number + 1 if i.since else
        last.number + 1 if last else 1)
    first = known[0] if known else i.since
    v = history.Version(
        line, number, base_desc(i.ksrc, args.base_desc), i.ksrc.version,
        i.date, first.change_id if first else
        history.change_id(line, i.date, base.commit),
        base.commit, commits[-1] if commits else base.commit, ids, subjects,
        [commits.index(c) for c in treewide],
        {d.step: d.line() if d.patch is not None or d.step.endswith(".patch")
         else d.kind.value for d in decisions})
    old = i.since or next((k for k in reversed(known)
                           if k.number < number), None)
    if store is None or old is None:
        return v, None, same, ""
    if i.in_reply_to:
        old.message_id = i.in_reply_to
    delta = history.compare(store, old, v, commits)
    return v, delta, same, history.range_diff(store, old, v)


def workdir_git(base: tree.Baseline) -> Path:
    """The snapshot repository of a baseline (its work tree's is under
    worktrees/)."""
    g = base.repo.git_dir
    return g.parent.parent if g.parent.name == "worktrees" else g


def apply_step(repo: tree.Repo, d: steps.Decision, patch_dir: Path,
               workdir: Path, sender: identity.Sender, date: str) -> None:
    """git am the patch d chose; one that needs fuzz is applied by GNU
    patch first and git am'ed as this tree's diff under the stored
    message (kept in WORKDIR/drift/ for the maintainer to read)."""
    assert d.patch is not None
    if d.fit is None or not d.fit.fuzzed:
        series.apply_patch(repo, d.patch, sender, date)
        return
    assert repo.work_tree is not None
    rc, report = drift.gnu_patch(repo.work_tree, d.patch, dry_run=False)
    if rc != 0:
        raise ToolError(f"GNU patch {d.patch.name} failed after its dry run "
                        f"succeeded: {report.strip().splitlines()[-1:]}")
    # -f: Debian's .gitignore ignores every file that is not tracked
    repo.git("add", "-f", "-A", ".")
    repo.git("commit", "-q", "--no-verify", "-m", "drift")
    stored = d.patch.read_text(encoding="utf-8", errors="surrogateescape")
    text = drift.splice(stored, drift.format_tail(repo.argv(), "HEAD"))
    repo.git("reset", "-q", "--hard", "HEAD~1")
    out = workdir / "drift" / d.step
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8", errors="surrogateescape")
    series.apply_patch(repo, out, sender, date)


def prove_fuzz(base: tree.Baseline, workdir: Path, ksrc: tree.KernelTree,
               d: steps.Decision, patch_dir: Path, before: str,
               jobs: int) -> steps.Decision:
    """A patch applied with fuzz: the C files it touches must compile (a
    hunk fuzzed into the wrong place, or onto code of another design,
    often does not).  If they do not, the step is refused and a refresh
    tree left, as for a hunk that lands nowhere."""
    assert d.fit is not None
    t = time.monotonic()
    try:
        proof = drift.compile_sources(base.repo.work_tree,
                                      workdir / "build-drift", jobs,
                                      d.fit.touched_sources())
    except ToolError as e:
        hint = refresh_hint(base, workdir, ksrc, d, patch_dir, before,
                            "the patch is applied (with fuzz) in {where}: "
                            "make it compile there")
        raise ToolError(f"{d.step} refused: {e}{hint}") from None
    log(f"  fuzz proven: {proof}: {time.monotonic() - t:.1f} s")
    return dataclasses.replace(d, proof=proof)


def refresh_hint(base: tree.Baseline, workdir: Path, ksrc: tree.KernelTree,
                 d: steps.Decision, patch_dir: Path, at: str = "",
                 what: str = "the rest of it is applied in {where}, each "
                 "rejected hunk in FILE.rej beside its file: apply them by "
                 "hand there, delete the .rej files") -> str:
    """For a step refused because its patch does not fit (hunks that land
    nowhere, or fuzz that does not compile): the refresh tree left for the
    maintainer at commit at (default HEAD), and what to run once fixed."""
    if d.fit is None or d.patch is None:
        return ""
    line = ".".join(ksrc.version.split(".")[:2])
    where = drift.leave_refresh_tree(
        base.repo.git_dir, at or base.repo.git("rev-parse", "HEAD").strip(),
        workdir, d.step, d.fit, str(d.patch.relative_to(patch_dir)),
        base_desc(ksrc, ""), line, list(d.probes))
    return (". " + what.format(where=where).capitalize() + ", then run "
            f"'make refresh STEP={d.step}' (generate.py refresh), which "
            "writes the step for this tree and regenerates")


def commit_step(repo: tree.Repo, parts: list[tuple[str, list[str] | None]],
                sender: identity.Sender) -> list[str]:
    """Commit what a generated step staged, in parts: (message, files)
    each, files None for all of it (what no part names stays staged);
    return the commits.

    With git's plumbing, one index for the parts: 'git commit -- FILES'
    refreshes and hashes a whole kernel's index for each of a dozen
    parts.  The commits are the same objects."""
    head = repo.git("rev-parse", "--verify", "HEAD^{commit}").strip()
    trees = tree.trees_of_parts(repo, head, [f for _, f in parts])
    commits = []
    for (message, _), tree_id in zip(parts, trees):
        message = message.rstrip("\n") + "\n"
        if sender.signed:
            message += f"\n{sender.sign_off()}\n"
        commits.append(repo.git(
            "commit-tree", "-p", (commits or [head])[-1], "-F", "-",
            tree_id, stdin=message).strip())
    repo.git("update-ref", "-m", "commit: generated step", "HEAD",
             commits[-1], head)
    return commits


def run_apply(args: argparse.Namespace) -> int:
    """git am OUT/series onto the pristine baseline, then check the result
    out in DEST.

    git am runs in WORKDIR/am, reset to the baseline each time; DEST is
    then moved to the resulting commit, which rewrites only the files that
    differ from what DEST had: a kernel built from DEST stays up to date
    when the series did not change."""
    ksrc = check_ksrc(args)
    workdir = check_workdir(args, ksrc)
    patches = series.patch_files(Path(args.series))
    if not str(args.dest).strip():
        raise ToolError("--dest is empty; name the work tree to create")
    dest = Path(args.dest).absolute()
    git_dir = workdir / "baseline.git"
    if _inside(dest, ksrc.path) or _inside(ksrc.path, dest):
        raise ToolError(f"--dest {dest} overlaps the input tree "
                        f"KSRC={ksrc.path}, which is only read; give a new "
                        "directory elsewhere")
    if _inside(dest, git_dir):
        raise ToolError(f"--dest {dest} is inside the baseline repository; "
                        "give a new directory elsewhere")
    if (dest.exists() or dest.is_symlink()) and \
            not guard.our_worktree(dest, git_dir):
        raise ToolError(f"--dest {dest} exists and was not made by "
                        f"'generate.py apply' with this WORKDIR; give a "
                        "directory that does not exist yet (apply creates "
                        "it), or remove this one yourself")
    guard.check_writable(dest.parent, "--dest's parent")
    with guard.locked(workdir, "WORKDIR", wait=not args.no_wait):
        _, commit, _ = tree.snapshot(ksrc, workdir)
        am = tree.attach_worktree(git_dir, commit, workdir / "am")
        for p in patches:
            series.apply_patch(am, p)
        head = am.git("rev-parse", "HEAD").strip()
        tree.attach_worktree(git_dir, head, dest)
    log(f"apply: {len(patches)} patches applied with git am in "
        f"{workdir / 'am'}; {dest} checked out at {head[:12]}")
    print(dest)
    return 0


def run_check(args: argparse.Namespace) -> int:
    """Completeness and idempotence of the conversion on a converted tree."""
    ksrc = check_ksrc(args)
    workdir = check_workdir(args, ksrc)
    if not str(args.tree).strip():
        raise ToolError("--tree is empty; name the converted tree")
    target = Path(args.tree).absolute()
    if not target.is_dir():
        raise ToolError(f"--tree {target}: no such directory; give the tree "
                        "with the series applied ('generate.py apply')")
    if not (target / ".git").exists():
        raise ToolError(f"--tree {target} is not a git work tree, so it "
                        "cannot be checked; make one with 'generate.py "
                        "apply --dest DIR'")
    version = spatch.find_spatch(args.spatch)
    with guard.locked(workdir, "WORKDIR", wait=not args.no_wait):
        snap, _, _ = tree.snapshot(ksrc, workdir)
        before = convert.discover(snap)
        converted = tree.work_repo(target.resolve())
        report = convert.check_converted(converted, before, args.spatch,
                                         version, args.jobs,
                                         workdir / "check-cache")
    for line in report.problems:
        print(f"  {line}")
    print(f"check: {len(before.ident)} namespace macros in the pristine "
          f"tree, {report.sites} namespace arguments in {report.files} "
          f"files of the converted tree; {len(report.problems)} problem(s); "
          f"spatch run again changed {len(report.rechanged)} file(s)")
    return 1 if report.problems or report.rechanged else 0


def check_kbuild_run(args: argparse.Namespace, what: str
                     ) -> tuple[tree.KernelTree, Path, Path, verify.Make]:
    """What verify and abi-check take: the tree, its work directory, an
    OUT holding a generated series, and how make runs (the wrapper
    resolved, saying so)."""
    ksrc = check_ksrc(args)
    workdir = check_workdir(args, ksrc)
    out = guard.check_writable(Path(args.out), "OUT")
    series.patch_files(out / "series")
    wrapper, note = kbuild.resolve_wrapper(args.cc_wrapper)
    if note:
        log(f"{what}: {note}")
    return ksrc, workdir, out, verify.Make(args.jobs, wrapper)


def run_verify(args: argparse.Namespace) -> int:
    """Preprocess every C file the ns-string commit touches, before and
    after it, and compare (the series must have been generated)."""
    ksrc, workdir, out, make = check_kbuild_run(args, "verify")
    log(f"verify: {out / 'series'}, {verify.ARCH} {verify.CONFIG} (other "
        "architectures' files: their own, nsgen/cross.py) in "
        f"{workdir}/verify, make -j{args.jobs} CC='{kbuild.cc(make.wrapper)}'")
    with guard.locked(workdir, "WORKDIR", wait=not args.no_wait), \
            guard.locked(out, "OUT", wait=not args.no_wait):
        o = verify.verify(ksrc, workdir, out, make, args.limit, log,
                          args.recompute)
    for f in o.of(verify.Verdict.DIFFERENT):
        print(f"  different: {f.path} (out/verify/diffs/{f.path}.diff)")
    for f in o.of(verify.Verdict.FAILED):
        print(f"  could not be preprocessed: {f.path}: {f.detail}")
    for p in o.problems:
        print(f"  problem: {p}")
    print(f"verify: {len(o.files)} of {o.total} files: {o.counts()}; "
          f"{o.seconds['total']:.0f} s; details in {out / 'verify'}")
    return 0 if o.passed else 1


def run_abi_check(args: argparse.Namespace) -> int:
    """Compare the module ABI of the pristine tree and of the series:
    genksyms expansions of the changed exporting files and of a probe of
    the changed headers, and the layouts of their structs."""
    ksrc, workdir, out, make = check_kbuild_run(args, "abi-check")
    log(f"abi-check: {out / 'series'} against the pristine tree, "
        f"{verify.ARCH} {verify.CONFIG} ({' '.join(abi.OPTIONS)}) in "
        f"{workdir}/abi, make -j{args.jobs} CC='{kbuild.cc(make.wrapper)}'")
    with guard.locked(workdir, "WORKDIR", wait=not args.no_wait), \
            guard.locked(out, "OUT", wait=not args.no_wait):
        r = abi.check(ksrc, workdir, out, make, log)
    print(abi.summary(r))
    print(f"abi-check: details in {out / 'abi'}")
    return 0 if r.kept else 1


def run_module(args: argparse.Namespace) -> int:
    """Make an external module's namespaces build on every kernel: a
    unified diff on stdout (or the files rewritten), the report on
    stderr.  The exit status is diff(1)'s: 0 nothing to change (warnings
    alone included), 1 changes to make or made, 2 an error."""
    root = Path(args.dir)
    try:
        results = module.convert_dir(root)
        changed = [r for r in results if r.new != r.old]
        if args.in_place:
            module.write(root, changed)
    except ToolError as e:
        print(f"generate.py: error: {e}", file=sys.stderr)
        return 2
    if not args.in_place:
        sys.stdout.write("".join(r.diff() for r in changed))
    notes = sorted((c for r in results for c in r.changes),
                   key=lambda c: (c.path, c.line))
    for c in notes:
        log(str(c))
    warnings = sum(c.warning for c in notes)
    log(f"{len(changed)} file(s) {'rewritten' if args.in_place else 'to change'}"
        f", {len(notes) - warnings} change(s), {warnings} warning(s)")
    return 1 if changed else 0


def run_workdir(args: argparse.Namespace) -> int:
    """Print the default work directory (the Makefile's WORKDIR default)."""
    print(DEFAULT_WORKDIR)
    return 0


WORKDIR_HELP = ("this tree's work directory: the git baseline, work "
                "trees, caches and builds; one run at a time (a second "
                "waits); make passes $WORKDIR/<tree's directory name> "
                "(default: %(default)s)")


def add_common(p: argparse.ArgumentParser, ksrc_help: str) -> None:
    """The options every subcommand that reads a kernel tree shares."""
    p.add_argument("--ksrc", required=True, help=ksrc_help)
    p.add_argument("--workdir", default=str(DEFAULT_WORKDIR),
                   help=WORKDIR_HELP)
    p.add_argument("--allow-dirty", action="store_true",
                   help="take a git KSRC with local changes (tracked "
                   "changes, untracked files that are not ignored) as it "
                   "is; the cover letter names the base 'HEAD plus local "
                   "changes' (default: refuse, listing the paths)")
    p.add_argument("--no-wait", action="store_true",
                   help="refuse at once when another run holds WORKDIR or "
                   "OUT (default: wait for it, saying so)")


def add_kbuild_options(p: argparse.ArgumentParser, out_help: str) -> None:
    """--out, --jobs and --cc-wrapper of the subcommands that run kbuild
    on a generated series (verify, abi-check)."""
    p.add_argument("--out", default=str(PROJECT / "out"),
                   help=f"{out_help} (default: %(default)s)")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="make -j (default: %(default)s)")
    p.add_argument("--cc-wrapper", default=kbuild.AUTO,
                   help="compiler wrapper: ccache, distcc, icecc, "
                   "'ccache distcc', '' for none (default: %(default)s: "
                   "ccache if installed)")


def add_generate_options(p: argparse.ArgumentParser) -> None:
    """The options of generate (and of refresh, which ends in one)."""
    p.add_argument("--out", default=str(PROJECT / "out"),
                   help="the series goes to OUT/series, replaced as a "
                   "whole at the end (default: %(default)s)")
    p.add_argument("--jobs", type=positive_int,
                   default=os.cpu_count() or 1,
                   help="parallel spatch and get_maintainer.pl processes, "
                   "1 or more (default: %(default)s)")
    p.add_argument("--spatch", default="spatch",
                   help="the spatch (Coccinelle) program (default: "
                   "%(default)s)")
    p.add_argument("--base-desc", default="",
                   help="how the cover letter names the base tree, e.g. "
                   "the Debian package and version")
    p.add_argument("--maintainers", default="", metavar="FILE",
                   help="the MAINTAINERS file get_maintainer.pl reads "
                   "(default: the tree's; an old stable tree's is out of "
                   "date: name a newer one)")
    p.add_argument("--series-file", default=str(PROJECT / "patches" / "series"),
                   help="the order file (default: %(default)s)")
    p.add_argument("--author", default="",
                   help='who sends the series, "Name <email>" (default: '
                   "git's user.name and user.email)")
    p.add_argument("--date", default="",
                   help="the patches' date, RFC 2822 or ISO 8601; "
                   "without a time zone it is UTC (default: the Debian "
                   "package's changelog date, or the newest commit of a "
                   "git tree)")
    p.add_argument("--history", default=None, metavar="DIR",
                   help="where each series is recorded as a version of its "
                   "kernel line (default: WORKDIR/../history, beside the "
                   "trees' work directories; '' records nothing, as make "
                   "check's scratch runs do)")
    p.add_argument("--since", default="", metavar="DIR",
                   help="compare with this earlier series (a directory "
                   "generate wrote, of the same line) instead of the last "
                   "version recorded")
    p.add_argument("--reroll-count", type=positive_int, default=None,
                   metavar="N", help="the version number (default: the "
                   "last one recorded for the line plus one; the same one "
                   "when the patches did not change)")
    p.add_argument("--in-reply-to", default="", metavar="ID|FILE",
                   help="the Message-ID of the last version as sent, or "
                   "the mail or mbox it was sent as (its cover letter's "
                   "Message-ID is taken): the new cover letter replies "
                   "to it")
    p.add_argument("--cache", default="", metavar="DIR",
                   help="where spatch's and the generated steps' results are "
                   "kept (default: WORKDIR/cache); the work directories of "
                   "several trees may share one, as its entries are keyed "
                   "by content (make check-kernels does)")
    p.add_argument("--recompute", action="store_true",
                   help="run every generated step, even where an earlier "
                   "run recorded its result for the same tree and code "
                   "(WORKDIR/cache/steps)")
    p.add_argument("--dry-run", action="store_true",
                   help="check every argument as a run would, then print "
                   "the commands instead of running them")


def setup_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="generate.py", description=__doc__.split("\n\n")[0],
        epilog="Without a subcommand, 'generate' is meant "
        "(generate.py --ksrc DIR ...).  Exit status: 0 done, 1 an error "
        "(one line), 2 a usage error; 'module' exits as diff(1) does.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    gen = sub.add_parser("generate", help="write the series (the default)")
    add_common(gen, "kernel source tree (only read, never modified)")
    add_generate_options(gen)
    ref = sub.add_parser(
        "refresh", help="turn the refresh tree a refused step left, once "
        "fixed by hand, into the step's text for this tree (a new variant "
        "in patches/N.M/, its probe in steps.conf), then generate")
    add_common(ref, "kernel source tree (only read, never modified)")
    add_generate_options(ref)
    ref.add_argument("step", help="the refused step: its name in "
                     "patches/series, or a unique start of it (0004)")
    app = sub.add_parser("apply", help="git am a series onto the pristine "
                         "baseline and check the result out in DEST")
    add_common(app, "pristine kernel tree (only read)")
    app.add_argument("--series", default=str(PROJECT / "out" / "series"),
                     help="the directory of the series' .patch files "
                     "(default: %(default)s)")
    app.add_argument("--dest", required=True,
                     help="the work tree to create; it must not exist yet, "
                     "or be one an earlier apply with this WORKDIR made "
                     "(then only the files that differ are rewritten)")
    chk = sub.add_parser("check", help="completeness and idempotence of the "
                         "conversion in a converted tree")
    add_common(chk, "pristine kernel tree (only read)")
    chk.add_argument("--tree", required=True,
                     help="the tree with the series applied (a git work "
                     "tree, e.g. from 'apply --dest')")
    chk.add_argument("--jobs", type=positive_int,
                     default=os.cpu_count() or 1,
                     help="parallel spatch processes (default: %(default)s)")
    chk.add_argument("--spatch", default="spatch",
                     help="the spatch program (default: %(default)s)")
    ver = sub.add_parser("verify", help="prove the ns-string commit a pure "
                         "refactor: preprocessed output before == after")
    add_common(ver, "pristine kernel tree (only read)")
    add_kbuild_options(ver, "verifies OUT/series, writes OUT/verify")
    ver.add_argument("--recompute", action="store_true",
                     help="preprocess again even when a passing result "
                     "for the same inputs is recorded")
    ver.add_argument("--limit", type=positive_int, default=None,
                     help="only N of the files, spread over the list "
                     "(for a quick look; not quoted by the cover letter)")
    abc = sub.add_parser("abi-check", help="compare the module ABI (genksyms "
                         "CRCs, struct layouts) of the pristine tree and "
                         "of the series")
    add_common(abc, "pristine kernel tree (only read)")
    add_kbuild_options(abc, "checks OUT/series, writes OUT/abi")
    mod = sub.add_parser(
        "module", help="convert an external module's sources so that they "
        "build on kernels before 6.13, on kernels carrying this series and "
        "on kernels from 6.13 on",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
Spell every namespace argument both ways under
'#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)' (quoted from 6.13 on,
bare before), in C files and in Kbuild files (-DDEFAULT_SYMBOL_NAMESPACE=).
Prints a unified diff and, on stderr, what was done; idempotent.  String
and character literals are never touched; prose in comments is quoted.  A
call it cannot read (no closing parenthesis, the wrong number of arguments,
a namespace that is neither an identifier nor a string) is left as it is
with a 'FILE:LINE: warning: ...'.""",
        epilog="""\
exit status, as diff(1):
  0  nothing to change (warnings alone do not count)
  1  changes to make (or made, with --in-place)
  2  an error

--in-place rewrites all the files or none: every file and its directory
must be writable (one without any write permission bit is refused, even
as root) and every new version is written beside its file, with the same
permission bits, before the first is renamed over the old one.""")
    mod.add_argument("dir", help="the module's source directory")
    mod.add_argument("--in-place", action="store_true",
                     help="rewrite the files instead of printing a diff "
                     "(all or none)")
    sub.add_parser("workdir", help="print the default work directory "
                   "($WORKDIR, else $XDG_CACHE_HOME/ns-series, else "
                   "~/.cache/ns-series)")
    return parser


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "generate": run_generate,
    "refresh": run_refresh,
    "apply": run_apply,
    "check": run_check,
    "verify": run_verify,
    "abi-check": run_abi_check,
    "module": run_module,
    "workdir": run_workdir,
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that every finally block
    (temporary files, locks) runs as on SIGINT."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    parser = setup_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # No subcommand: 'generate' (an option first, or nothing at all); a
    # word that is not a subcommand is argparse's "invalid choice".
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h",
                                                               "--help"):
        argv.insert(0, "generate")
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return HANDLERS[args.command](args)
    except ToolError as e:
        print(f"generate.py: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        # not expected: every known case is a ToolError; still one line
        where = f": {e.filename}" if e.filename else ""
        print(f"generate.py: error: {e.strerror or e}{where}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"generate.py: {what}; the input tree and OUT/series are as "
              "they were", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
