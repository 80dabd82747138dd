#!/usr/bin/env python3
"""Generate the string-namespace / EXPORT_SYMBOL_GPL_FOR patch series.

tree -> git baseline in WORKDIR -> patches/series in order (hand-written
patches with git am, generated steps with spatch) -> out/series/.
The input tree is only read.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from nsgen import (convert, identity, kbuild, mail, module, review, series,
                   spatch, steps, tree, verify)
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
    if kinds & {steps.Kind.APPLIES, steps.Kind.VARIANT}:
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
    body = f"""This series applies to {base_desc or 'Linux ' + ksrc.version}
(make kernelversion: {ksrc.version}; git tree {base.tree}).

Namespaces become C strings, so that an export can name the modules
allowed to use it: EXPORT_SYMBOL_GPL_FOR(sym, "kvm") exports into the
reserved namespace "module:kvm", which the module loader and modpost
enforce for in-tree modules of the listed names only.  The loader's
hard-coded GPL-licence offenders become one table, which gains Tuxedo's
modules; names in it compare as module names do ('-' equals '_').

In-tree, for the loader, means the "intree" modinfo tag and, on a
kernel with CONFIG_MODULE_SIG, a signature by a key built into the
kernel: a module signed with a key of the secondary or platform keyring
(a distribution's or a user's Machine Owner Key) is still out of tree,
and still loads, without the restricted symbols.  Without
CONFIG_MODULE_SIG the tag, which any module can write, is all there is.
symbol_get() hands a restricted symbol only to a module that may use it
and refuses callers that are not modules.

{external_modules_text(decisions)}
What the restriction guarantees: only the listed in-tree modules get the
symbol through the interfaces that hand symbols to modules, linking at
load time and symbol_get()/symbol_request().  What it does not: code
already running in the kernel can still find the address by other
means, such as kprobes, kallsyms or reading memory.

The series is regenerated, not hand-edited: patches/series in the
generator's repository lists the hand-written patches and the generated
steps in order, and patches/steps.conf what each looks for in the tree.
Each step was decided on this tree before it ran (applies as written,
applies in the variant written for trees like this one, or is already
in this tree and left out); each generated commit says how to reproduce
it.

Steps (patches/series) and what each did on this tree:
{chr(10).join(lines)}

How it was verified:
  - every hand-written patch applied with git am to the tree as it stood;
  - spatch {spatch_version} processed every candidate file: no parse
    failure, no timeout (a failure stops the generator);
  - the completeness check found no bare namespace left in C, headers,
    documentation or scripts, and no macro that still stringifies one;
{checks.equivalence}
  - hunks of the generated commits (git show -U0), mechanical when a
    namespace identifier only became the same identifier in quotes, or
    #ns / __stringify(ns) became ns (nsgen/review.py); the others are
    listed for reading:
{checks.hunks}

Who to ask (scripts/get_maintainer.pl --nogit --nogit-fallback
--nokeywords, for the files the series touches):
{checks.maintainers}"""
    return subject, body


@dataclass
class CoverChecks:
    """What the cover letter reports about the committed series."""
    equivalence: str
    hunks: str
    maintainers: str
    per_file: dict[str, list[str]] | None = None   # get_maintainer.pl
    wide: list[str] | None = None       # its answer for the treewide files


def cover_checks(base: tree.Baseline, workdir: Path,
                 generated: list[str], jobs: int,
                 treewide: list[str]) -> CoverChecks:
    """Hunk review of the generated commits, equivalence figures recorded
    by 'make verify' for this very series, get_maintainer.pl's Cc list."""
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
                    for f in touched(c)} | {mail.LOADER, mail.MODPOST})
    t = time.monotonic()
    found = review.get_maintainers(base.work, small, workdir / "cache", jobs)
    union = review.get_maintainers_union(base.work, wide, workdir / "cache",
                                         jobs) if wide else []
    log(f"  get_maintainer.pl on {len(small)} files one by one and "
        f"{len(wide)} at once: {time.monotonic() - t:.1f} s")
    everyone = None
    if found is not None and union is not None:
        everyone = review.merge_answers(union, *(
            found.per_file.get(f, []) for f in small if f in files))
    return CoverChecks(verify.cover_lines(workdir, repo),
                       review.review_text(reviews) or "    (no generated commit)",
                       review.union_text(everyone, len(files)),
                       found.per_file if found else None, union)


def base_desc(ksrc: tree.KernelTree, given: str) -> str:
    """How the cover letter names the base: --base-desc, else the Debian
    package that setup.sh unpacked the tree from, else make kernelversion."""
    return given or tree.package_of(ksrc) or f"Linux {ksrc.version}"


def run_generate(args: argparse.Namespace) -> int:
    start = time.monotonic()
    ksrc = tree.check_tree(Path(args.ksrc))
    order_file = Path(args.series_file)
    order = series.read_order(order_file, set(convert.STEPS))
    version = spatch.find_spatch(args.spatch)
    workdir = Path(args.workdir).resolve()
    out = Path(args.out).resolve() / "series"
    if args.dry_run:
        print(shlex.join(["git", f"--git-dir={workdir}/baseline.git",
                          f"--work-tree={ksrc.path}", "add", "-f", "-A"]))
        for e in order:
            if e.kind == "patch":
                print(f"# {e.name}: applies, a variant, or already there, "
                      "by patches/steps.conf")
                print(shlex.join(["git", "am", str(order_file.parent / e.name)]))
            else:
                print(f"# generated step {e.name}: spatch per file, see "
                      f"nsgen/convert.py")
        print(shlex.join(["git", "format-patch", "--zero-commit",
                          "--no-signature", "--cover-letter", "-o", str(out)]))
        return 0
    log(f"generate: Linux {ksrc.version} from {ksrc.path}")
    t = time.monotonic()
    if not (workdir / "baseline.git" / "index").exists():
        log("  first run: snapshotting the tree and checking it out "
            "(about a minute)")
    base = tree.make_baseline(ksrc, workdir)
    log(f"  baseline {base.commit[:12]} in {workdir}: "
        f"{time.monotonic() - t:.1f} s")
    sender = identity.resolve(args.author, Path.cwd())
    date, date_from = identity.input_date(ksrc.path, args.date)
    base.repo.env = tree.sender_env(sender.name, sender.email, date)
    log(f"  author {sender.ident()}, date {date} (from {date_from})")
    if not sender.signed:
        log(f"generate: warning: {identity.UNSIGNED_NOTE}")
    patch_dir = order_file.parent
    rules = steps.read_rules(patch_dir / "steps.conf")
    steps.check_rules(rules, patch_dir,
                      [e.name for e in order if e.kind == "patch"])
    decisions: list[steps.Decision] = []
    results: list[convert.StepResult] = []
    generated: list[str] = []
    treewide: list[str] = []        # the tree-wide conversion's commit
    for e in order:
        t = time.monotonic()
        if e.kind == "patch":
            d = steps.decide(base.repo, patch_dir, e.name, rules.get(e.name))
            decisions.append(d)
            log(f"  {e.name}: {d.line()}")
            if d.kind is steps.Kind.REFUSED:
                raise ToolError(f"{e.name} refused: {d.reason}")
            if d.patch is not None:
                series.apply_patch(base.repo, d.patch, sender, date)
                log(f"  applied {d.patch.relative_to(patch_dir)}: "
                    f"{time.monotonic() - t:.1f} s")
            continue
        r = convert.run_step(e.name, base.repo, args.spatch, version,
                             args.jobs, workdir / "cache", args.recompute)
        results.append(r)
        decisions.append(steps.generated_decision(
            r.name, r.status is convert.Status.CHANGED, r.notes))
        if r.status is convert.Status.CHANGED:
            message = r.message.rstrip("\n") + "\n"
            if sender.signed:
                message += f"\n{sender.sign_off()}\n"
            base.repo.git("commit", "-q", "--cleanup=verbatim", "-F", "-",
                          stdin=message)
            generated.append(base.repo.git("rev-parse", "HEAD").strip())
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
    checks = cover_checks(base, workdir, generated, args.jobs, treewide)
    subject, body = cover_text(ksrc, base_desc(ksrc, args.base_desc), base,
                               decisions, version, checks)
    if not sender.signed:
        body = f"NOT SENDABLE: {identity.UNSIGNED_NOTE}.\n\n{body}"
    commits = base.repo.git("rev-list", "--reverse",
                            f"{base.commit}..HEAD").split()

    def mailable(files: list[Path]) -> None:
        mail.address_and_thread(files, {commits.index(c) + 1
                                        for c in treewide},
                                checks.per_file, checks.wide, sender.email)

    files = series.format_series(base.repo, base.commit, out, subject, body,
                                 mailable)
    for f in files:
        print(f)
    log(f"generate: {max(len(files) - 1, 0)} patches and a cover letter in {out}: "
        f"{time.monotonic() - start:.1f} s")
    return 0


def run_apply(args: argparse.Namespace) -> int:
    """git am OUT/series onto the pristine baseline, then check the result
    out in DEST.

    git am runs in WORKDIR/am, reset to the baseline each time; DEST is
    then moved to the resulting commit, which rewrites only the files that
    differ from what DEST had: a kernel built from DEST stays up to date
    when the series did not change."""
    ksrc = tree.check_tree(Path(args.ksrc))
    workdir = Path(args.workdir).resolve()
    patches = series.patch_files(Path(args.series))
    _, commit, _ = tree.snapshot(ksrc, workdir)
    dest = Path(args.dest).resolve()
    am = tree.attach_worktree(workdir / "baseline.git", commit,
                              workdir / "am")
    for p in patches:
        series.apply_patch(am, p)
    head = am.git("rev-parse", "HEAD").strip()
    tree.attach_worktree(workdir / "baseline.git", head, dest)
    log(f"apply: {len(patches)} patches applied with git am in "
        f"{workdir / 'am'}; {dest} checked out at {head[:12]}")
    print(dest)
    return 0


def run_check(args: argparse.Namespace) -> int:
    """Completeness and idempotence of the conversion on a converted tree."""
    ksrc = tree.check_tree(Path(args.ksrc))
    workdir = Path(args.workdir).resolve()
    snap, _, _ = tree.snapshot(ksrc, workdir)
    before = convert.discover(snap)
    converted = tree.Repo(Path(args.tree).resolve() / ".git", Path(args.tree).resolve())
    version = spatch.find_spatch(args.spatch)
    report = convert.check_converted(converted, before, args.spatch, version,
                                     args.jobs, workdir / "check-cache")
    for line in report.problems:
        print(f"  {line}")
    print(f"check: {len(before.ident)} namespace macros in the pristine "
          f"tree, {report.sites} namespace arguments in {report.files} "
          f"files of the converted tree; {len(report.problems)} problem(s); "
          f"spatch run again changed {len(report.rechanged)} file(s)")
    return 1 if report.problems or report.rechanged else 0


def run_verify(args: argparse.Namespace) -> int:
    """Preprocess every C file the ns-string commit touches, before and
    after it, and compare (the series must have been generated)."""
    ksrc = tree.check_tree(Path(args.ksrc))
    workdir = Path(args.workdir).resolve()
    out = Path(args.out).resolve()
    wrapper, note = kbuild.resolve_wrapper(args.cc_wrapper)
    if note:
        log(f"verify: {note}")
    make = verify.Make(args.jobs, wrapper)
    log(f"verify: {out / 'series'}, {verify.ARCH} {verify.CONFIG} (other "
        "architectures' files: their own, nsgen/cross.py) in "
        f"{workdir}/verify, make -j{args.jobs} CC='{kbuild.cc(wrapper)}'")
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


def run_module(args: argparse.Namespace) -> int:
    """Make an external module's namespaces build on every kernel: a
    unified diff on stdout (or the files rewritten), the report on
    stderr."""
    root = Path(args.dir)
    results = module.convert_dir(root)
    changed = [r for r in results if r.new != r.old]
    if args.in_place:
        module.write(root, changed)
    else:
        sys.stdout.write("".join(r.diff() for r in changed))
    notes = sorted((c for r in results for c in r.changes),
                   key=lambda c: (c.path, c.line))
    for c in notes:
        log(str(c))
    warnings = sum(c.warning for c in notes)
    log(f"{len(changed)} file(s) {'rewritten' if args.in_place else 'to change'}"
        f", {len(notes) - warnings} change(s), {warnings} warning(s)")
    return 0


def run_workdir(args: argparse.Namespace) -> int:
    """Print the default work directory (the Makefile's WORKDIR default)."""
    print(DEFAULT_WORKDIR)
    return 0


def setup_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="generate.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    gen = sub.add_parser("generate", help="write the series (the default)")
    gen.add_argument("--ksrc", required=True,
                     help="kernel source tree (only read, never modified)")
    gen.add_argument("--workdir", default=str(DEFAULT_WORKDIR),
                     help="baseline, work tree and cache (default: %(default)s)")
    gen.add_argument("--out", default=str(PROJECT / "out"),
                     help="the series goes to OUT/series (default: %(default)s)")
    gen.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                     help="parallel spatch processes (default: %(default)s)")
    gen.add_argument("--spatch", default="spatch", help="spatch binary")
    gen.add_argument("--base-desc", default="",
                     help="how the cover letter names the base tree, e.g. "
                     "the Debian package and version")
    gen.add_argument("--series-file", default=str(PROJECT / "patches" / "series"),
                     help="the order file (default: %(default)s)")
    gen.add_argument("--author", default="",
                     help='who sends the series, "Name <email>" (default: '
                     "git's user.name and user.email)")
    gen.add_argument("--date", default="",
                     help="the patches' date, RFC 2822 or ISO 8601 (default: "
                     "the Debian package's changelog date, or the newest "
                     "commit of a git tree)")
    gen.add_argument("--recompute", action="store_true",
                     help="run every generated step, even where an earlier "
                     "run recorded its result for the same tree and code "
                     "(WORKDIR/cache/steps)")
    gen.add_argument("--dry-run", action="store_true",
                     help="print the commands instead of running them")
    app = sub.add_parser("apply", help="git am a series onto the pristine "
                         "baseline and check the result out in DEST")
    app.add_argument("--ksrc", required=True, help="pristine kernel tree")
    app.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    app.add_argument("--series", default=str(PROJECT / "out" / "series"))
    app.add_argument("--dest", required=True, help="work tree to create")
    chk = sub.add_parser("check", help="completeness and idempotence of the "
                         "conversion in a converted tree")
    chk.add_argument("--ksrc", required=True, help="pristine kernel tree")
    chk.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    chk.add_argument("--tree", required=True,
                     help="the tree with the series applied (a git work tree)")
    chk.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    chk.add_argument("--spatch", default="spatch")
    ver = sub.add_parser("verify", help="prove the ns-string commit a pure "
                         "refactor: preprocessed output before == after")
    ver.add_argument("--ksrc", required=True, help="pristine kernel tree")
    ver.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    ver.add_argument("--out", default=str(PROJECT / "out"),
                     help="verifies OUT/series, writes OUT/verify "
                     "(default: %(default)s)")
    ver.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                     help="make -j (default: %(default)s)")
    ver.add_argument("--cc-wrapper", default=kbuild.AUTO,
                     help="compiler wrapper: ccache, distcc, icecc, "
                     "'ccache distcc', '' for none (default: %(default)s: "
                     "ccache if installed)")
    ver.add_argument("--recompute", action="store_true",
                     help="preprocess again even when a passing result "
                     "for the same inputs is recorded")
    ver.add_argument("--limit", type=int, default=None,
                     help="only N of the files, spread over the list "
                     "(for a quick look; not quoted by the cover letter)")
    mod = sub.add_parser(
        "module", help="convert an external module's sources so that they "
        "build on kernels before 6.13, on kernels carrying this series and "
        "on kernels from 6.13 on",
        description="Spell every namespace argument both ways under "
        "'#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)' (quoted from "
        "6.13 on, bare before), in C files and in Kbuild files "
        "(-DDEFAULT_SYMBOL_NAMESPACE=).  Prints a unified diff; idempotent.")
    mod.add_argument("dir", help="the module's source directory")
    mod.add_argument("--in-place", action="store_true",
                     help="rewrite the files instead of printing a diff")
    sub.add_parser("workdir", help="print the default work directory "
                   "($WORKDIR, else $XDG_CACHE_HOME/ns-series, else "
                   "~/.cache/ns-series)")
    return parser


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "generate": run_generate,
    "apply": run_apply,
    "check": run_check,
    "verify": run_verify,
    "module": run_module,
    "workdir": run_workdir,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = setup_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in HANDLERS and argv[0] not in ("-h", "--help"):
        argv.insert(0, "generate")
    args = parser.parse_args(argv)
    try:
        return HANDLERS[args.command](args)
    except ToolError as e:
        print(f"generate.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("generate.py: interrupted; out/series is unchanged",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
