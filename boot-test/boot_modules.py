# SPDX-License-Identifier: GPL-2.0-only
"""The test modules of modules/, built against the boot test's kernel.

Each module is built in its own directory under the build directory.  The
ones the guest's loader must refuse are built with modpost's errors turned
into warnings (else they never reach the loader); a second, default build
of those checks that modpost stops them first, with its message.  make
nsdeps runs on a module named kvm that imports nothing: it must add the
quoted "DMA_BUF" import and never one of "module:kvm".

A module that tests a kvm-only export the kernel itself has (not one the
series makes) is skipped, with the reason, where the built kernel's
Module.symvers shows no such export (6.1 exports anon_inode_make_secure_inode
to everybody): it is not built, modpost's case is a SKIP, and the guest
finds NAME.skip instead of NAME.ko.
"""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, Optional

import boot_keys
from boot_kernel import Build
from boot_results import Case, Status
from nsgen.run import ToolError, run, tail

HERE = Path(__file__).resolve().parent
SOURCES = HERE / 'modules'


class ModuleSpec(NamedTuple):
    """A test module of modules/ and what the build side expects of it."""
    name: str
    # The guest's loader must refuse it: build with modpost's errors as
    # warnings, so that it reaches the loader at all.
    refused_by_loader: bool
    # Messages of which modpost must print one when it stops the module in
    # a default build; empty: modpost has no reason to stop it.
    modpost_messages: tuple[str, ...] = ()
    # A symbol this kernel must export to kvm only for the module to test
    # anything; without that export the module's cases are skipped.
    needs_kvm_only: str = ''
    # Built from modules/SOURCE.c (default: NAME.c) as module MODULE
    # (default: SOURCE), then copied to NAME.ko: renamed to forged_name in
    # its own struct module and .modinfo (a name kbuild never makes, with a
    # '-'), and signed with the boot test's key SIGN (boot_keys.py:
    # "unknown", "secondary", or "secondary-carried": its certificate in
    # the signature).
    source: str = ''
    module: str = ''
    forged_name: str = ''
    sign: str = ''
    # Writes a namespace bare somewhere: skipped where the kernel takes
    # strings only (upstream since 6.13).
    bare: bool = False
    # Test modules whose exports it uses (their Module.symvers are passed
    # in KBUILD_EXTRA_SYMBOLS): built after them.
    uses: tuple[str, ...] = ()
    # What `modinfo -F import_ns` must print for the built module, and the
    # namespaces its Module.symvers must give its exports.
    imports: tuple[str, ...] = ()
    exports_ns: tuple[str, ...] = ()

    @property
    def kbuild_name(self) -> str:
        return self.module or self.source or self.name

    @property
    def source_file(self) -> Path:
        return SOURCES / f'{self.source or self.name}.c'


RESTRICTED = 'exported only for modules kvm'
RESERVED = 'imports the reserved namespace module:kvm'
IMPOSTOR = 'module kvm uses symbol fpu_swap_kvm_fpstate ' + RESTRICTED
# modpost's words for a missing import: to 6.12, and from 6.13 on.
NO_IMPORT = ('module dma_buf_no_import uses symbol dma_buf_put from '
             'namespace DMA_BUF, but does not import it.',
             "module uses symbol 'dma_buf_put' from namespace 'DMA_BUF', "
             'but does not import it.')

MODULES = (
    # An out-of-tree kvm that forges the intree tag: unsigned, signed with
    # an unknown key, signed with a key of the secondary keyring.
    ModuleSpec('kvm_impostor_unsigned', True, (IMPOSTOR,),
               source='kvm_impostor', module='kvm'),
    ModuleSpec('kvm_impostor_unknown_key', True, source='kvm_impostor',
               module='kvm', sign='unknown'),
    ModuleSpec('kvm_impostor_secondary_key', True, source='kvm_impostor',
               module='kvm', sign='secondary'),
    # The same key, its certificate carried in the signature and never
    # enrolled: a chain to the build key, but not a built-in signer.
    ModuleSpec('kvm_impostor_carried_cert', True, source='kvm_impostor',
               module='kvm', sign='secondary-carried'),
    # A harmless module signed that way: it loads, its signature verified.
    ModuleSpec('carried_cert_module', False, sign='secondary-carried'),
    ModuleSpec('symbol_get_via_worker', True),
    ModuleSpec('symbol_request_intruder', True),
    ModuleSpec('fpu_swap_intruder', True, (
        'module fpu_swap_intruder uses symbol fpu_swap_kvm_fpstate '
        + RESTRICTED,)),
    ModuleSpec('anon_inode_intruder', True, (
        'module anon_inode_intruder uses symbol anon_inode_make_secure_inode '
        + RESTRICTED,), 'anon_inode_make_secure_inode'),
    ModuleSpec('anon_inode_import_intruder', True, (
        'module anon_inode_import_intruder uses symbol '
        'anon_inode_make_secure_inode ' + RESTRICTED,
        'module anon_inode_import_intruder ' + RESERVED),
        'anon_inode_make_secure_inode'),
    ModuleSpec('reserved_ns_import', True, (
        'module reserved_ns_import ' + RESERVED,)),
    ModuleSpec('tuxedo_io', True),
    ModuleSpec('tuxedo_io_dash', True, source='tuxedo_io',
               forged_name='tuxedo-io'),
    ModuleSpec('clevo_wmi', False),
    ModuleSpec('dma_buf_import', False, imports=('DMA_BUF',)),
    # External modules that write their namespaces as modules for older
    # (bare) or newer (quoted) kernels do; each builds unchanged.
    ModuleSpec('ns_import_bare', False, bare=True, imports=('DMA_BUF',)),
    # Bare before 6.13 only: builds on every kernel, strings-only ones too.
    ModuleSpec('ns_import_guarded', False, imports=('DMA_BUF',)),
    ModuleSpec('ns_export_bare', False, bare=True,
               exports_ns=('NS_EXPORT_BARE',)),
    ModuleSpec('ns_export_quoted', False, exports_ns=('NS_EXPORT_QUOTED',)),
    ModuleSpec('ns_export_user', False, bare=True,
               uses=('ns_export_bare', 'ns_export_quoted'),
               imports=('NS_EXPORT_BARE', 'NS_EXPORT_QUOTED')),
    ModuleSpec('dma_buf_no_import', True, NO_IMPORT),
)


def exports(symvers: str) -> dict[str, tuple[str, str]]:
    """Module.symvers: symbol -> (export macro, namespace)."""
    found = {}
    for line in symvers.splitlines():
        fields = line.split('\t')
        if len(fields) >= 4:
            found[fields[1]] = (fields[3], fields[4] if len(fields) > 4
                                else '')
    return found


STRINGS_ONLY = re.compile(
    r'^#define EXPORT_SYMBOL_NS\(sym, ns\)\s+__EXPORT_SYMBOL\(sym, "", ns\)',
    re.M)


def strings_only(export_h: str) -> Optional[str]:
    """Why this kernel refuses a bare namespace from an external module
    (its <linux/export.h> is given), or None."""
    if '__ns_as_written(' in export_h or not STRINGS_ONLY.search(export_h):
        return None
    return ("this kernel's <linux/export.h> takes namespaces as string "
            'literals only (upstream since 6.13), also from external modules')


def skip_reason(spec: ModuleSpec, symbols: dict[str, tuple[str, str]],
                strings: Optional[str] = None) -> Optional[str]:
    """Why spec tests nothing on this kernel, or None; strings: why the
    kernel takes no bare namespace (strings_only())."""
    if spec.bare and strings:
        return strings
    if not spec.needs_kvm_only:
        return None
    sym = spec.needs_kvm_only
    if sym not in symbols:
        return f'this kernel does not export {sym}'
    macro, namespace = symbols[sym]
    if (namespace.startswith('module:')
            and 'kvm' in namespace.removeprefix('module:').split(',')):
        return None
    return (f'this kernel exports {sym} to every module ({macro}'
            f'{", namespace " + namespace if namespace else ""}), '
            'not to kvm only')


def skipped(b: Build) -> dict[str, str]:
    """The test modules this kernel skips, with the reason (read from the
    build's Module.symvers)."""
    symbols = exports((b.build_dir / 'Module.symvers').read_text())
    export_h = b.ksrc / 'include/linux/export.h'
    strings = strings_only(export_h.read_text() if export_h.is_file() else '')
    return {spec.name: reason for spec in MODULES
            if (reason := skip_reason(spec, symbols, strings)) is not None}


def module_dir(b: Build, name: str, default_modpost: bool = False) -> Path:
    sub = f'modpost-{name}' if default_modpost else name
    return b.build_dir / 'boot-test-modules' / sub


def set_up(mdir: Path, source: Path, name: str) -> None:
    """mdir builds source as module name (an unchanged source keeps its
    timestamp, so make has nothing to do)."""
    mdir.mkdir(parents=True, exist_ok=True)
    dst = mdir / f'{name}.c'
    if not dst.is_file() or dst.read_bytes() != source.read_bytes():
        dst.write_bytes(source.read_bytes())
    kbuild = mdir / 'Kbuild'
    if not kbuild.is_file():
        kbuild.write_text(f'obj-m := {name}.o\n')


def build_module(b: Build, spec: ModuleSpec, default_modpost: bool
                 ) -> subprocess.CompletedProcess[str]:
    """make M= for one module.  A missing namespace import only becomes a
    warning with modpost's -N, so CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_
    IMPORTS is set for modpost alone: the kernel's own config is not."""
    mdir = module_dir(b, spec.name, default_modpost)
    set_up(mdir, spec.source_file, spec.kbuild_name)
    args = []
    if spec.refused_by_loader and not default_modpost:
        args += ['KBUILD_MODPOST_WARN=1',
                 'CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_IMPORTS=y']
    if spec.uses:
        args.append('KBUILD_EXTRA_SYMBOLS=' + ' '.join(
            str(module_dir(b, n) / 'Module.symvers') for n in spec.uses))
    return b.module_make(mdir, *args, 'modules')


def forge_name(spec: ModuleSpec, data: bytes) -> bytes:
    """The module data with its name replaced by forged_name (same length)
    where the loader reads it: the name field of .gnu.linkonce.this_module
    and name= in .modinfo."""
    old, new = spec.kbuild_name.encode(), spec.forged_name.encode()
    if len(old) != len(new):
        raise ValueError(f'{spec.forged_name}: not the length of '
                         f'{spec.kbuild_name}')
    # NUL-terminated: "tuxedo_io_init" and the like stay as they are.
    found = data.count(old + b'\0')
    if found < 2:
        raise ValueError(f'{spec.kbuild_name}.ko names itself {found} '
                         'time(s), expected the struct module and .modinfo')
    return data.replace(old + b'\0', new + b'\0')


def finish(b: Build, spec: ModuleSpec, mdir: Path) -> str | None:
    """NAME.ko from the built module (renamed, signed); None when done,
    else why not."""
    built_ko = mdir / f'{spec.kbuild_name}.ko'
    if built_ko.name == f'{spec.name}.ko' and not spec.sign:
        return None
    try:
        data = built_ko.read_bytes()
        if spec.forged_name:
            data = forge_name(spec, data)
        (mdir / f'{spec.name}.ko').write_bytes(data)
        if spec.sign:
            boot_keys.sign(b, spec.sign, mdir / f'{spec.name}.ko')
    except (OSError, ValueError, ToolError) as e:
        return str(e)
    return None


def modpost_case(spec: ModuleSpec,
                 proc: subprocess.CompletedProcess[str]) -> Case:
    """Did a default build of spec stop in modpost with its message?"""
    name = f'modpost_stops_{spec.name}'
    found = [m for m in spec.modpost_messages if m in proc.stdout]
    if proc.returncode != 0 and found:
        return Case(name, Status.PASS)
    why = ('the build succeeded' if proc.returncode == 0
           else 'the build failed without the expected message')
    diagnostics = [why] + [f'expected: {m}' for m in spec.modpost_messages]
    diagnostics += [line for line in proc.stdout.splitlines()
                    if line.startswith(('ERROR: modpost', 'WARNING: modpost'))]
    return Case(name, Status.FAIL, diagnostics)


def build_all(b: Build, log: Path) -> list[Case]:
    """Every test module (for the guest), the default-modpost builds and
    make nsdeps; the host-side cases."""
    if any(spec.sign for spec in MODULES):
        boot_keys.make_keys(b)
    skip = skipped(b)
    for name in skip:
        # No stale .ko of an earlier run in the initramfs.
        (module_dir(b, name) / f'{name}.ko').unlink(missing_ok=True)
    cases = [Case(f'modpost_stops_{s.name}', Status.SKIP, reason=skip[s.name])
             for s in MODULES if s.name in skip and s.modpost_messages]
    todo = [s for s in MODULES if s.name not in skip]
    jobs: list[tuple[ModuleSpec, bool]] = [(s, False) for s in todo]
    jobs += [(s, True) for s in todo if s.modpost_messages]
    # Modules that use other test modules' exports after those.
    jobs.sort(key=lambda j: bool(j[0].uses))
    first = [j for j in jobs if not j[0].uses]
    with ThreadPoolExecutor(max_workers=b.jobs) as pool:
        procs = list(pool.map(lambda j: build_module(b, *j), first))
        procs += list(pool.map(lambda j: build_module(b, *j),
                               jobs[len(first):]))
    with log.open('w') as f:
        for (spec, default_modpost), proc in zip(jobs, procs):
            how = ' (default modpost)' if default_modpost else ''
            f.write(f'### {spec.name}{how}: exit {proc.returncode}\n'
                    f'{proc.stdout}')
            problem = None
            if not default_modpost and proc.returncode != 0:
                problem = f'did not build, see {log}:\n{tail(proc.stdout, 5)}'
            elif not default_modpost:
                problem = finish(b, spec, module_dir(b, spec.name))
            if problem:
                # No stale .ko of an earlier run in the initramfs.
                ko = module_dir(b, spec.name) / f'{spec.name}.ko'
                ko.unlink(missing_ok=True)
                b.say(f'modules: {spec.name}: {problem}')
            if default_modpost:
                cases.append(modpost_case(spec, proc))
    order = {spec.name: i for i, spec in enumerate(MODULES)}
    cases.sort(key=lambda c: order[c.name.removeprefix('modpost_stops_')])
    cases += [spelling_case(b, s, skip.get(s.name)) for s in MODULES
              if s.imports or s.exports_ns]
    cases.append(nsdeps_case(b, log.with_name('nsdeps.log')))
    return cases


def modinfo_imports(ko: Path) -> list[str]:
    """What modinfo -F import_ns prints for a built module, sorted."""
    return sorted(run(['modinfo', '-F', 'import_ns', ko],
                      timeout=60).stdout.split())


def spelling_case(b: Build, spec: ModuleSpec, skip: Optional[str]) -> Case:
    """The namespaces of a built module as modinfo and its Module.symvers
    show them: the names, never with the quotes a source may write."""
    name = f'namespaces_of_{spec.name}_without_quotes'
    if skip:
        return Case(name, Status.SKIP, reason=skip)
    mdir = module_dir(b, spec.name)
    problems = []
    if spec.imports:
        try:
            got = modinfo_imports(mdir / f'{spec.name}.ko')
        except ToolError as e:
            got = []
            problems.append(str(e))
        if got != sorted(spec.imports):
            problems.append(f'modinfo -F import_ns: {got}, expected '
                            f'{sorted(spec.imports)}')
    if spec.exports_ns:
        symvers = mdir / 'Module.symvers'
        got = sorted({ns for _, ns in exports(
            symvers.read_text() if symvers.is_file() else '').values()})
        if got != sorted(spec.exports_ns):
            problems.append(f'{symvers}: namespaces {got}, expected '
                            f'{sorted(spec.exports_ns)}')
    return Case(name, Status.FAIL if problems else Status.PASS, problems)


def built(b: Build) -> list[tuple[str, Path]]:
    """(name, .ko) of the test modules that were built, by name."""
    found = []
    for spec in sorted(MODULES):
        ko = module_dir(b, spec.name) / f'{spec.name}.ko'
        if ko.is_file():
            found.append((spec.name, ko))
    return found


NSDEPS_SOURCE = SOURCES / 'nsdeps_kvm.c'
NSDEPS_EXPECTED = ['MODULE_IMPORT_NS("DMA_BUF");']


def imports_of(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines()
            if line.strip().startswith('MODULE_IMPORT_NS(')]


def nsdeps_case(b: Build, log: Path) -> Case:
    """make nsdeps on a module named kvm that imports nothing, twice.

    It must add the quoted DMA_BUF import (the generated series converts
    scripts/nsdeps) and never one of "module:kvm"; the second run must
    find nothing to add.  modpost's errors are warnings here (an M= build
    may not use fpu_swap_kvm_fpstate even as kvm), else nsdeps stops.
    """
    name = 'nsdeps_adds_quoted_import_never_module_ns'
    mdir = module_dir(b, 'nsdeps')
    set_up(mdir, NSDEPS_SOURCE, 'kvm')
    source = mdir / 'kvm.c'
    log.write_text('')
    for attempt in ('first', 'second'):
        proc = b.module_make(mdir, 'KBUILD_MODPOST_WARN=1', 'nsdeps',
                             log=log)
        if proc.returncode != 0:
            return Case(name, Status.FAIL, [
                f'{attempt} make nsdeps: exit {proc.returncode} (see {log})',
                *tail(proc.stdout, 5).splitlines()])
        imports = imports_of(source.read_text())
        if imports != NSDEPS_EXPECTED:
            return Case(name, Status.FAIL, [
                f'after the {attempt} make nsdeps the imports are '
                f'{imports or "none"}, expected {NSDEPS_EXPECTED}'])
        added = [line for line in proc.stdout.splitlines()
                 if line.startswith('Adding namespace')]
        if attempt == 'second' and added:
            return Case(name, Status.FAIL, [
                'the second make nsdeps still found imports missing '
                f'(see {log}):', *added])
    return Case(name, Status.PASS)
