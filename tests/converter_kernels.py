#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""generate.py module's output builds on three kinds of kernel.

The boot test's external modules that write a namespace bare are converted
(generate.py module --in-place, in a scratch copy) and built with make -C
KERNEL M=DIR against:

  patched   the boot test's kernel, carrying the series;
  headers   Debian's linux-headers for its 6.1 kernel (linux-headers-amd64,
            installed by setup.sh deps): bare namespaces only;
  upstream  a 7.x tree prepared with make modules_prepare: strings only.
            Without Module.symvers there, modpost's unresolved symbols are
            warnings (KBUILD_MODPOST_WARN=1).

On each, modinfo -F import_ns must give the bare name.  The sources as they
were, unconverted, must fail on the upstream tree: a converter that changed
nothing would fail there too.  TAP on stdout; the last line is
'N passed, N failed'.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Optional, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen.run import ToolError, run, tail  # noqa: E402

MODULES = PROJECT / 'boot-test' / 'modules'
# (source, module name, what modinfo -F import_ns must print)
SOURCES = (('ns_import_bare', ('DMA_BUF',)),
           ('ns_import_guarded', ('DMA_BUF',)))


def newest_headers() -> Optional[Path]:
    found = sorted(Path('/usr/src').glob('linux-headers-*-amd64'))
    return found[-1] if found else None


def prepare_upstream(src: Path, out: Path, jobs: int) -> None:
    """make defconfig modules_prepare in out (the tree is only read)."""
    if (out / 'scripts/mod/modpost').is_file() and \
            (out / 'include/generated/utsrelease.h').is_file():
        return
    out.mkdir(parents=True, exist_ok=True)
    run(['make', '-C', src, f'O={out}', f'-j{jobs}', 'defconfig',
         'modules_prepare'], timeout=1800, log=out / 'prepare.log')


def module_copy(dest: Path, name: str, convert: bool) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copy(MODULES / f'{name}.c', dest / f'{name}.c')
    (dest / 'Kbuild').write_text(f'obj-m := {name}.o\n')
    if convert:
        # exit status as diff(1): 0 nothing changed, 1 rewritten, 2 error
        proc = run([sys.executable, PROJECT / 'generate.py', 'module',
                    '--in-place', dest], timeout=300, check=False)
        if proc.returncode not in (0, 1):
            said = (proc.stdout or '').strip()
            raise SystemExit(f'generate.py module --in-place {dest}: exit '
                             f'{proc.returncode}: {said}')
    return dest


def build(kdir: Path, mdir: Path, *extra: str) -> tuple[int, str]:
    proc = run(['make', '-C', kdir, f'M={mdir}', *extra, 'modules'],
               timeout=900, check=False)
    return proc.returncode, proc.stdout + (proc.stderr or '')


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--patched', type=Path, required=True,
                    help="the boot test's build directory")
    ap.add_argument('--headers', type=Path, default=newest_headers(),
                    help='linux-headers tree (default: the newest '
                    '/usr/src/linux-headers-*-amd64)')
    ap.add_argument('--upstream', type=Path, required=True,
                    help='a 7.x kernel tree (only read)')
    ap.add_argument('--work', type=Path, required=True,
                    help='scratch directory (modules_prepare output too)')
    ap.add_argument('--jobs', type=int, default=2)
    args = ap.parse_args(argv)
    results: list[tuple[str, Optional[str]]] = []

    def case(name: str, problem: Optional[str]) -> None:
        results.append((name, problem))
        print(f'{"not ok" if problem else "ok"} {len(results)} {name}',
              flush=True)
        for line in (problem or '').splitlines():
            print(f'    # {line}', flush=True)

    print('TAP version 13', flush=True)
    upstream_build = args.work / 'upstream-build'
    kernels: list[tuple[str, Optional[Path], tuple[str, ...]]] = [
        ('patched', args.patched, ()),
        ('headers', args.headers, ()),
        ('upstream', upstream_build, ('KBUILD_MODPOST_WARN=1',))]
    try:
        prepare_upstream(args.upstream, upstream_build, args.jobs)
    except ToolError as e:
        case('upstream 7.x tree: make modules_prepare', str(e))
        kernels.pop()
    for kname, kdir, extra in kernels:
        for name, imports in SOURCES:
            label = f'{name}, converted, builds on the {kname} kernel'
            if kdir is None or not (kdir / 'Makefile').is_file():
                case(label, f'no kernel tree at {kdir}')
                continue
            mdir = module_copy(args.work / kname / name, name, True)
            status, out = build(kdir, mdir, *extra)
            if status:
                case(label, f'make M= exit {status}:\n{tail(out, 8)}')
                continue
            got = run(['modinfo', '-F', 'import_ns', mdir / f'{name}.ko'],
                      timeout=60).stdout.split()
            case(f'{name} on the {kname} kernel: modinfo -F import_ns',
                 None if sorted(got) == sorted(imports) else
                 f'{got}, expected {list(imports)}')
    if kernels[-1][0] == 'upstream':
        name = SOURCES[0][0]
        mdir = module_copy(args.work / 'upstream' / f'{name}-as-is', name,
                           False)
        status, _ = build(upstream_build, mdir, 'KBUILD_MODPOST_WARN=1')
        case(f'{name} unconverted fails on the upstream kernel (the '
             'control)', None if status else 'it built: the converter '
             'would not be needed there')
    failed = sum(1 for _, p in results if p)
    print(f'{len(results) - failed} passed, {failed} failed', flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
