#!/usr/bin/env python3
"""A sample of generate.py module's outputs built with kbuild against the
patched tree.

Six random external modules (tests/test_module_fuzz.py's compilable(),
fixed seeds) mix namespace macro calls: MODULE_IMPORT_NS() of namespaces
the built kernel exports (read from its Module.symvers; DMA_BUF's
dma_buf_put used, so that modpost insists on that import),
EXPORT_SYMBOL_NS[_GPL]() of the module's own functions, directly and
through the module's own macros, DEFAULT_SYMBOL_NAMESPACE in the Kbuild
file or in C, calls split over lines, and string literals and comments
holding namespace-macro text.  Each is copied twice into a scratch
directory: one copy is converted (generate.py module --in-place must
exit 1), and both are built with make -C BUILD_DIR M=DIR modules, the
boot test's way (Build.module_make).  Each build must succeed without a
warning about the module, modinfo -F import_ns must list the imports
without quotes and the module's Module.symvers its exports with their
namespaces, unquoted.  The copy as written builds too: the patched kernel
takes either spelling from external modules (on a kernel that takes
strings only, 7.x, the copy as written is skipped).  A second generate.py
module on the converted, built copy must find nothing to change (exit 0).

  tests/module_kbuild_check.py --ksrc PATCHED \
      --build-dir WORKDIR/build-boot-test

TAP on stdout, one case per module and property; the last line is
'N passed, N failed'.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "boot-test")]

import boot_kernel  # noqa: E402
import boot_modules  # noqa: E402
from nsgen import kbuild  # noqa: E402
from nsgen.run import ToolError, run, tail  # noqa: E402
from tests.test_module_fuzz import (KBUILD_SEEDS, Import, Sample,  # noqa: E402
                                    compilable)


class Use(NamedTuple):
    """A namespace whose symbol the modules use when the build has it."""
    namespace: str
    option: str                 # the kernel option that builds it
    header: str
    symbol: str


USES = (Use("DMA_BUF", "CONFIG_DMA_SHARED_BUFFER", "linux/dma-buf.h",
            "dma_buf_put"),)
# Namespaces imported without using a symbol of theirs: the first ones, by
# name, that the kernel itself (vmlinux) exports into.
IMPORT_ONLY = 2


class Result(NamedTuple):
    name: str
    problem: Optional[str]      # None: passed


def config_options(config: str) -> dict[str, str]:
    return dict(m.groups() for m in
                re.finditer(r"^(CONFIG_\w+)=(.*)$", config, re.M))


def symvers_namespaces(symvers: str) -> dict[str, dict[str, str]]:
    """Module.symvers: namespace -> {symbol: where it is exported}."""
    found: dict[str, dict[str, str]] = {}
    for line in symvers.splitlines():
        fields = line.split("\t")
        if len(fields) > 4 and fields[4]:
            found.setdefault(fields[4], {})[fields[1]] = fields[2]
    return found


def choose_imports(build_dir: Path) -> tuple[list[Import], list[str]]:
    """The namespaces the modules import, from the build's .config and
    Module.symvers, and what was chosen and why (TAP comments)."""
    options = config_options((build_dir / ".config").read_text())
    exported = symvers_namespaces(
        (build_dir / "Module.symvers").read_text())
    chosen: list[Import] = []
    notes = []
    for u in USES:
        value = options.get(u.option, "not set")
        if u.symbol in exported.get(u.namespace, {}):
            chosen.append(Import(u.namespace, u.header, u.symbol))
            notes.append(f"imports {u.namespace} ({u.option}={value}), "
                         f"using {u.symbol}")
        else:
            notes.append(f"not imported: {u.namespace} ({u.option}="
                         f"{value}; Module.symvers has no {u.symbol} in it)")
    others = sorted(ns for ns, syms in exported.items()
                    if re.fullmatch(r"[A-Za-z_]\w*", ns)
                    and "vmlinux" in syms.values()
                    and ns not in {u.namespace for u in USES})
    for ns in others[:IMPORT_ONLY]:
        chosen.append(Import(ns))
        notes.append(f"imports {ns} (exported by vmlinux), using nothing")
    return chosen, notes


def generate_module(mdir: Path, *args: str) -> tuple[int, str, str]:
    p = run([sys.executable, PROJECT / "generate.py", "module", *args,
             mdir], timeout=300, check=False)
    return p.returncode, p.stdout, p.stderr or ""


def build_problem(b: boot_kernel.Build, s: Sample, mdir: Path
                  ) -> Optional[str]:
    """Why make M= did not build the module cleanly, or None."""
    proc = b.module_make(mdir, "modules")
    if proc.returncode != 0 or not (mdir / f"{s.name}.ko").is_file():
        return (f"make M= exit {proc.returncode}\n"
                f"{tail(proc.stdout, 12)}")
    warnings = [line for line in proc.stdout.splitlines()
                if "warning" in line.lower()
                and (str(mdir) in line or s.name in line)]
    if warnings:
        return "warnings:\n" + "\n".join(warnings[:12])
    return None


def namespace_results(s: Sample, mdir: Path, label: str,
                      built: Optional[str]) -> list[Result]:
    """modinfo's imports and Module.symvers' exports of a built module."""
    imports = ", ".join(s.imports)
    modinfo = f"{label}: modinfo -F import_ns lists {imports}, unquoted"
    symvers = (f"{label}: Module.symvers gives its {len(s.exports)} "
               "exports their namespaces, unquoted")
    if built is not None:
        return [Result(modinfo, "not built"), Result(symvers, "not built")]
    try:
        # a namespace imported twice may be listed twice
        got = sorted(set(boot_modules.modinfo_imports(mdir / f"{s.name}.ko")))
        problem = None if got == list(s.imports) else \
            f"modinfo gives {got}, expected {list(s.imports)}"
    except ToolError as e:
        problem = str(e)
    results = [Result(modinfo, problem)]
    path = mdir / "Module.symvers"
    exports = {sym: ns for sym, (_, ns) in boot_modules.exports(
        path.read_text() if path.is_file() else "").items()}
    wrong = sorted(f"{sym}: {exports.get(sym, 'missing')!r}, expected "
                   f"{ns!r}" for sym, ns in s.exports.items()
                   if exports.get(sym) != ns)
    wrong += sorted(f"{sym}: not exported by the source"
                    for sym in exports.keys() - s.exports.keys())
    results.append(Result(symvers, "; ".join(wrong) or None))
    return results


def check_sample(b: boot_kernel.Build, s: Sample, work: Path
                 ) -> list[Result]:
    """The cases of one module: converted, then as written."""
    shutil.rmtree(work / s.name, ignore_errors=True)
    written = s.write(work / s.name / "as-written")
    conv = s.write(work / s.name / "converted")
    results = []
    status, _, err = generate_module(conv, "--in-place")
    results.append(Result(
        f"{s.name}: generate.py module --in-place changes it (exit 1)",
        None if status == 1 else f"exit {status}\n{tail(err, 8)}"))
    label = f"{s.name}, converted"
    built = build_problem(b, s, conv)
    results.append(Result(f"{label}: builds with make M= against the "
                          "patched kernel, no warning", built))
    results += namespace_results(s, conv, label, built)
    status, out, err = generate_module(conv)
    results.append(Result(
        f"{label}: a second generate.py module changes nothing (exit 0)",
        None if status == 0 and not out else
        f"exit {status}\n{tail(out or err, 8)}"))
    label = f"{s.name}, as written"
    lib = b.ksrc / "scripts" / "Makefile.lib"
    if "__KBUILD_EXTMOD_NS" not in lib.read_text(errors="replace"):
        results.append(Result(
            f"{label}: not built # SKIP this kernel takes namespaces as "
            "string literals only, as upstream has since 6.13 (no "
            "either-way patch in the series)", None))
        return results
    built = build_problem(b, s, written)
    results.append(Result(f"{label}: builds too (either spelling), no "
                          "warning", built))
    results += namespace_results(s, written, label, built)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ksrc", required=True, type=Path,
                    help="the patched tree the build directory was built "
                    "from")
    ap.add_argument("--build-dir", required=True, type=Path,
                    help="a built kernel (the boot test's build directory)")
    ap.add_argument("--cc-wrapper", default=kbuild.AUTO,
                    help="compiler wrapper (default: ccache if installed)")
    ap.add_argument("--work", type=Path,
                    help="where the modules are written and built, kept "
                    "(default: a temporary directory, removed)")
    args = ap.parse_args(argv)
    results: list[Result] = []

    def report(r: Result) -> None:
        results.append(r)
        if r.problem is None:
            print(f"ok {len(results)} - {r.name}", flush=True)
            return
        first, *rest = r.problem.splitlines() or [""]
        print(f"not ok {len(results)} - {r.name}: {first}", flush=True)
        for line in rest:
            print(f"    # {line}", flush=True)

    print("TAP version 13", flush=True)
    try:
        for f in ("Module.symvers", ".config", "scripts/mod/modpost"):
            if not (args.build_dir / f).is_file():
                raise ToolError(f"{args.build_dir}: no built kernel (no {f})"
                                "; run the boot test first")
        imports, notes = choose_imports(args.build_dir)
        if not imports:
            raise ToolError(f"{args.build_dir / 'Module.symvers'}: no "
                            "namespace to import")
        b = boot_kernel.Build.of(args.ksrc, args.build_dir, 1,
                                 args.cc_wrapper)
    except (ToolError, OSError) as e:
        report(Result("a built kernel with namespaces to import", str(e)))
    else:
        for note in notes:
            print(f"# {note}", flush=True)
        with tempfile.TemporaryDirectory(
                prefix="module-kbuild-check.") as tmp:
            work = (args.work or Path(tmp)).resolve()
            for seed in KBUILD_SEEDS:
                for r in check_sample(b, compilable(seed, imports), work):
                    report(r)
    failed = sum(r.problem is not None for r in results)
    print(f"1..{len(results)}")
    print(f"{len(results) - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
