# SPDX-License-Identifier: GPL-2.0-only
"""Out-of-tree modules that nobody here wrote: Debian 13's *-dkms packages.

Each package is fetched with setup.sh dkms (a private apt configuration,
never the machine's sources), copied into the build directory and built
unchanged the way dkms builds it: make -C KERNEL M=DIR with the other
arguments of the MAKE[0] line of its dkms.conf.  The guest loads it, and
modinfo must show its imports without quotes.

A package whose sources do not build on this kernel for a reason that is
not a namespace (an API it does not know yet) is skipped, with the
compiler's first error as the reason; a namespace error is a failure.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import NamedTuple, Optional

import boot_modules
from boot_kernel import Build
from boot_results import Case, Status
from nsgen.run import ToolError, run, tail

SETUP = Path(__file__).resolve().parent.parent / 'setup.sh'
NAMESPACE_ERROR = re.compile(r'MODULE_IMPORT_NS|EXPORT_SYMBOL_NS|namespace',
                             re.I)


class Dkms(NamedTuple):
    package: str                # the Debian package, e.g. evdi-dkms
    module: str                 # the module it builds (MODULE.ko)
    imports: tuple[str, ...]    # what modinfo -F import_ns must print


PACKAGES = (Dkms('evdi-dkms', 'evdi', ('DMA_BUF',)),)


def make_args(conf: str) -> list[str]:
    """The arguments of dkms.conf's MAKE[0] besides make, -C DIR and M=."""
    m = re.search(r'^MAKE\[0\]="([^"]*)"', conf, re.M)
    if m is None:
        raise ToolError('dkms.conf has no MAKE[0]="..."')
    words = shlex.split(m.group(1))[1:]
    args, skip_next = [], False
    for w in words:
        if skip_next:
            skip_next = False
        elif w == '-C':
            skip_next = True
        elif not w.startswith(('-C', 'M=')):
            args.append(w)
    return args


def module_dir(b: Build, spec: Dkms) -> Path:
    return b.build_dir / 'boot-test-modules' / f'dkms-{spec.module}'


def skip_file(b: Build, spec: Dkms) -> Path:
    return module_dir(b, spec).with_suffix('.skip')


def not_namespace_error(output: str) -> Optional[str]:
    """The first compiler error, when no error, no note on one (the macro
    expansions) and no modpost error is about namespaces."""
    lines = output.splitlines()
    errors = [line for line in lines if ' error: ' in line]
    told = [line for line in lines
            if ' error: ' in line or ' note: ' in line
            or line.startswith('ERROR:')]
    if not errors or any(NAMESPACE_ERROR.search(e) for e in told):
        return None
    return errors[0].strip()


def build_one(b: Build, spec: Dkms, log: Path) -> list[Case]:
    name = f'dkms_{spec.module}_builds_unchanged'
    ko = module_dir(b, spec) / f'{spec.module}.ko'
    skip_file(b, spec).unlink(missing_ok=True)
    ko.unlink(missing_ok=True)
    try:
        out = run(['bash', SETUP, 'dkms', spec.package,
                   b.build_dir.parent / 'dkms'], timeout=600).stdout
        src = Path(out.strip().splitlines()[-1])
        version = (src / '.package').read_text().split()[-1]
        mdir = module_dir(b, spec)
        shutil.rmtree(mdir, ignore_errors=True)
        shutil.copytree(src, mdir, ignore=shutil.ignore_patterns('.package'))
        args = make_args((mdir / 'dkms.conf').read_text())
    except (ToolError, OSError, IndexError) as e:
        return [Case(name, Status.FAIL, [f'{spec.package}: {e}'])]
    proc = b.module_make(mdir, *args, 'modules', log=log)
    what = f'{spec.package} {version}'
    if proc.returncode != 0:
        other = not_namespace_error(proc.stdout)
        if other:
            reason = f'{what} does not build on this kernel: {other}'
            skip_file(b, spec).write_text(reason + '\n')
            return [Case(name, Status.SKIP, reason=reason),
                    Case(f'namespaces_of_{spec.module}_without_quotes',
                         Status.SKIP, reason=reason)]
        return [Case(name, Status.FAIL, [
            f'{what}: make M= exit {proc.returncode} (see {log})',
            *tail(proc.stdout, 8).splitlines()])]
    cases = [Case(name, Status.PASS)]
    got = boot_modules.modinfo_imports(ko)
    imports = Case(f'namespaces_of_{spec.module}_without_quotes', Status.PASS)
    if got != sorted(spec.imports):
        imports = Case(imports.name, Status.FAIL, [
            f'{ko.name}: modinfo -F import_ns gives {got}, expected '
            f'{sorted(spec.imports)}'])
    return cases + [imports]


def build_all(b: Build, log: Path) -> list[Case]:
    cases = []
    for spec in PACKAGES:
        cases += build_one(b, spec, log.with_name(
            f'{log.stem}-{spec.module}.log'))
    return cases


def built(b: Build) -> list[tuple[str, Path]]:
    return [(spec.module, ko) for spec in PACKAGES
            if (ko := module_dir(b, spec) / f'{spec.module}.ko').is_file()]


def skipped(b: Build) -> dict[str, str]:
    return {spec.module: f.read_text().strip() for spec in PACKAGES
            if (f := skip_file(b, spec)).is_file()}
