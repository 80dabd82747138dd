#!/usr/bin/env python3
"""Show that each security check of the series is what stops its attack:
boot-test the patched kernel once as it is, then once per mutant (the
kernel with one check taken out), and require that exactly the boot-test
cases written against that check fail.

  tests/mutants.py --ksrc PRISTINE --workdir W --series out/series

The series is applied to a work tree of its own (WORKDIR/mutants/applied)
and built in WORKDIR/mutants/build-boot-test, the boot test's layout, so
that ccache reuses the boot test's objects; a mutant changes one file of
kernel/module/ and rebuilds incrementally.  The user's tree and the boot
test's work tree are never touched.  Results per run in --out/NAME.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "tests")]
PY = sys.executable

import scratch_tree  # noqa: E402
from nsgen import series  # noqa: E402
from nsgen.run import ToolError, run  # noqa: E402


@dataclass(frozen=True)
class Mutant:
    """One check taken out: pattern (a regular expression that must match
    once in path, on every kernel variant of the patch) becomes
    replacement; cases are the boot-test leaves that must then fail, as
    regular expressions: each must match a failed case, and every failed
    case must match one."""
    name: str
    check: str
    path: str
    pattern: str
    replacement: str
    cases: tuple[str, ...]


MUTANTS = (
    Mutant("intree-tag-only",
           "in-tree needs a signature by a built-in key, not only the tag "
           "(0006)",
           "kernel/module/main.c", r"return mod->sig_builtin;",
           "return true;",
           ("kvm_impostor_unsigned_refused",
            "kvm_impostor_unknown_key_refused",
            "kvm_impostor_secondary_key_refused",
            "kvm_impostor_carried_cert_refused",
            "kvm_unsigned_refused_saying_why",
            # the rebuilt kvm carries the tag too (modpost -K)
            "kvm_rebuilt_unsigned_refused_saying_why",
            "kvm_rebuilt_trusted_key_refused_saying_why",
            # the impostor it refuses twelve times loads instead
            "refusal_messages_rate_limited")),
    Mutant("any-trusted-keyring",
           "the key must be a built-in one, not any key the kernel trusts "
           "(0006)",
           "kernel/module/signing.c", r"builtin = !ret;",
           "builtin = true;",
           ("kvm_impostor_secondary_key_refused",
            "kvm_impostor_carried_cert_refused",
            "kvm_rebuilt_trusted_key_refused_saying_why")),
    Mutant("signer-chain-followed",
           "a built-in key must have made the signature itself: a "
           "certificate it signed, carried in the signature, does not "
           "count (0006)",
           "certs/system_keyring.c",
           r"ret = pkcs7_validate_trust_signer\(pkcs7, trusted_keys\);",
           "ret = pkcs7_validate_trust(pkcs7, trusted_keys);",
           ("kvm_impostor_carried_cert_refused",
            # signed the same way: the key's certificate in the signature
            "kvm_rebuilt_trusted_key_refused_saying_why")),
    Mutant("symbol-get-lets-builtin-callers-through",
           "symbol_get() refuses a caller that is not a module (0006)",
           "kernel/module/main.c",
           r"return !modules \|\| !module_ns_refused\(modules, caller, sym\);",
           "return !modules || !caller || "
           "!module_ns_refused(modules, caller, sym);",
           ("symbol_get_via_worker_refused",)),
    Mutant("symbol-get-unchecked",
           "symbol_get() and symbol_request() apply the export's module "
           "list (0004)",
           "kernel/module/main.c",
           r"return !modules \|\| !module_ns_refused\(modules, caller, sym\);",
           # always true; modules still read (-Werror=unused-variable)
           "return modules || !modules;",
           ("symbol_get_via_worker_refused",
            "symbol_request_intruder_refused")),
    Mutant("offender-names-strcmp",
           "licence offenders compare as module names, '-' equal to '_' "
           "(0005)",
           "kernel/module/main.c", r"parameq\(name, ",
           "!strcmp(name, ",
           ("tuxedo_io_dash_refused_gpl_only_symbol",
            r'"[^"]*-[^"]*" is an offender')),
    Mutant("refusals-not-rate-limited",
           "a refusal's message is rate-limited (0006)",
           "kernel/module/main.c",
           r'pr_err_ratelimited(\("%s: symbol %s is exported only for '
           r'modules %s, signed)', r"pr_err\1",
           ("refusal_messages_rate_limited",)),
    Mutant("signed-kvm-refused",
           "the signed in-tree kvm still gets its export (the cases do not "
           "pass by refusing everything)",
           "kernel/module/main.c", r"return mod->sig_builtin;",
           "return false;",
           ("kvm_loads_with_irqbypass",
            "kvm_rebuilt_signed_loads_and_unloads")),
)

RESULT = re.compile(r"^(\s*)(ok|not ok) \d+ (?:- )?(.*?)(?: # .*)?$")


def failed_leaves(ktap: str) -> set[str]:
    """Names of the failed results that are not suites: in KTAP a suite's
    line follows its indented subtests."""
    failed: set[str] = set()
    prev_indent = -1
    for line in ktap.splitlines():
        m = RESULT.match(line)
        if not m:
            if line.strip() and not line.lstrip().startswith("#"):
                prev_indent = len(line) - len(line.lstrip())
            continue
        indent = len(m.group(1))
        if m.group(2) == "not ok" and prev_indent <= indent:
            failed.add(m.group(3).strip())
        prev_indent = indent
    return failed


def mutate(src: Path, m: Mutant) -> None:
    path = src / m.path
    text = path.read_text()
    new, n = re.subn(m.pattern, m.replacement, text, count=2)
    if n != 1:
        raise ToolError(f"mutant {m.name}: {m.pattern!r} matches {n} times "
                        f"in {m.path}, not once: update tests/mutants.py "
                        "for this kernel's patches")
    path.write_text(new)


def boot_test(src: Path, build_dir: Path, out: Path,
              args: argparse.Namespace) -> set[str]:
    """Run the boot test; the failed leaf cases."""
    run([PY, PROJECT / "boot-test" / "run.py", "--ksrc", src,
         "--build-dir", build_dir, "--out", out, "--jobs", str(args.jobs),
         "--cc-wrapper", args.cc_wrapper], timeout=4500, check=False,
         log=out.parent / f"{out.name}.log")
    results = out / "results.ktap"
    if not results.is_file():
        raise ToolError(f"boot test wrote no {results}; see "
                        f"{out.parent / (out.name + '.log')}")
    return failed_leaves(results.read_text(errors="replace"))


def setup_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    scratch_tree.add_arguments(ap, "mutants")
    ap.add_argument("--only", action="append", default=[],
                    choices=[m.name for m in MUTANTS],
                    help="run this mutant only (repeatable)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = setup_parser().parse_args(argv)
    mutants = [m for m in MUTANTS if not args.only or m.name in args.only]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        scratch = scratch_tree.pristine(args, "mutants")
        repo, src = scratch.repo, scratch.src
        for patch in scratch.patches:
            series.apply_patch(repo, patch)
    except ToolError as e:
        print(f"mutants: error: {e}", file=sys.stderr)
        return 1
    build_dir = scratch.build_dir
    print("TAP version 13")
    print(f"1..{len(mutants) + 1}")
    passed = 0
    for n, m in enumerate((None, *mutants), 1):
        start = time.monotonic()
        name = m.name if m else "unmutated"
        why = ""
        try:
            if m is not None:
                mutate(src, m)
            got = boot_test(src, build_dir, out / name, args)
            want = m.cases if m else ()
            other = sorted(c for c in got
                           if not any(re.fullmatch(w, c) for w in want))
            alive = [w for w in want
                     if not any(re.fullmatch(w, c) for c in got)]
            if other:
                why = f"other cases failed too: {', '.join(other)}"
            elif alive:
                why = f"survived: still passing: {', '.join(alive)}"
        except ToolError as e:
            why = str(e)
        finally:
            if m is not None:
                repo.git("checkout", "-q", "--", m.path)
        elapsed = time.monotonic() - start
        if m is None:
            what = "the series as it is passes every case"
        else:
            what = f"without: {m.check}; fail: {', '.join(m.cases)}"
        if why:
            print(f"not ok {n} - {name} ({elapsed:.0f} s): {why}", flush=True)
            if m is None:
                break
        else:
            passed += 1
            print(f"ok {n} - {name} ({elapsed:.0f} s): {what}", flush=True)
    failed = len(mutants) + 1 - passed     # a failed baseline stops the run
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
