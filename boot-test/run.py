#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Boot-test a kernel tree that carries the namespace series.

Phases, each timed on stderr:
  apply      check the (already patched) tree given by --ksrc
  build      x86_64 defconfig + config.fragment, bzImage and modules, out of
             tree in --build-dir (reused: a run with nothing changed is cheap)
  modules    the test modules of modules/ built against that build, the
             host-side check that modpost stops the intruders by default, and
             make nsdeps on nsdeps_kvm.c (adds "DMA_BUF", never "module:kvm")
  initramfs  busybox-static + init + modules, from the gen_init_cpio list
             initramfs.list (reproducible: -t 0, gzip without name or time)
  boot       qemu-system-x86_64: KVM if a probe runs and the kernel then
             prints within 5 s, else TCG (said so)
  parse      the guest's KTAP and the KUnit KTAP of the serial log

Writes results.ktap, serial.log, guest.ktap, Module.symvers, build-dir and the
logs of the builds into --out. The last line on stdout is "N passed, N
failed"; the exit status is non-zero on any failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import gzip
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple, Optional, Sequence

HERE = Path(__file__).resolve().parent
FRAGMENT = HERE / 'config.fragment'
INIT = HERE / 'init'
INITRAMFS_LIST = HERE / 'initramfs.list'
MODULES_SRC = HERE / 'modules'
REPO = HERE.parent

# KUnit suites the kernel patches add; each must have run and passed.
REQUIRED_KUNIT_SUITES = ('module_export_for',)

BUILD_TIMEOUT = 3 * 3600
MAKE_TIMEOUT = 600
PROBE_TIMEOUT = 10
# A kernel under KVM reaches its serial console in well under a second; a
# KVM that runs the probe's real-mode code but not a kernel prints nothing.
KVM_SILENCE_TIMEOUT = 5
TAIL_LINES = 20
CONFIG_STAMP = '.boot-test-config'


class ModuleSpec(NamedTuple):
    """A test module of modules/ and what the build side expects of it."""
    name: str
    # The guest's loader must refuse it: build with modpost's errors as
    # warnings, so that it reaches the loader at all.
    refused_by_loader: bool
    # Messages of which modpost must print one when it stops the module in
    # a default build; empty: modpost has no reason to stop it.
    modpost_messages: tuple[str, ...] = ()


RESTRICTED = 'exported only for modules kvm'
RESERVED = 'imports the reserved namespace module:kvm'

MODULES = (
    ModuleSpec('fpu_swap_intruder', True, (
        'module fpu_swap_intruder uses symbol fpu_swap_kvm_fpstate '
        + RESTRICTED,)),
    ModuleSpec('anon_inode_intruder', True, (
        'module anon_inode_intruder uses symbol anon_inode_make_secure_inode '
        + RESTRICTED,)),
    ModuleSpec('anon_inode_import_intruder', True, (
        'module anon_inode_import_intruder uses symbol '
        'anon_inode_make_secure_inode ' + RESTRICTED,
        'module anon_inode_import_intruder ' + RESERVED)),
    ModuleSpec('reserved_ns_import', True, (
        'module reserved_ns_import ' + RESERVED,)),
    ModuleSpec('tuxedo_io', True),
    ModuleSpec('clevo_wmi', False),
    ModuleSpec('dma_buf_import', False),
    ModuleSpec('dma_buf_no_import', True, (
        'module dma_buf_no_import uses symbol dma_buf_put from namespace '
        'DMA_BUF, but does not import it.',)),
)


class BootTestError(Exception):
    """A failure for the user: one line saying what went wrong."""


class Status(enum.Enum):
    SUCCESS = 'ok'
    FAILURE = 'FAILED'


@dataclasses.dataclass
class PhaseResult:
    name: str
    status: Status
    elapsed: float


@dataclasses.dataclass
class TestCase:
    """One line of results.ktap, with its diagnostics and nested KTAP."""
    name: str
    ok: bool
    diagnostics: list[str] = dataclasses.field(default_factory=list)
    subtest: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Run:
    """What the phases share."""
    ksrc: Path
    build_dir: Path
    out: Path
    jobs: int
    timeout: float
    accel: str
    cases: list[TestCase] = dataclasses.field(default_factory=list)
    cc: str = 'gcc'
    env: dict[str, str] = dataclasses.field(default_factory=dict)


# --- running programs -----------------------------------------------------

def tail(text: str, lines: int = TAIL_LINES) -> str:
    return '\n'.join(text.splitlines()[-lines:])


class Timeout(BootTestError):
    """A program ran past its timeout (and was killed)."""


def run(cmd: Sequence[str | os.PathLike[str]], *, cwd: Optional[Path] = None,
        env: Optional[Mapping[str, str]] = None, timeout: float = MAKE_TIMEOUT,
        log: Optional[Path] = None, stdout: Optional[Path] = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one program; a failure becomes a one-line BootTestError.

    The output is captured as text in the result's stdout. With log given,
    it is appended to that file as it comes (a long build can be followed
    with tail -f); with stdout given, the standard output goes to that file
    as bytes and only the standard error is captured. With check=False a
    non-zero exit is returned rather than raised, for callers expecting it.
    """
    argv = [str(c) for c in cmd]
    full_env = None if env is None else {**os.environ, **env}
    options = dict(cwd=cwd, env=full_env, timeout=timeout,
                   stdin=subprocess.DEVNULL, check=False)
    try:
        if log is not None:
            with log.open('a') as f:
                f.write(f'$ {shlex.join(argv)}\n')
                f.flush()
                start = f.tell()
                proc = subprocess.run(argv, stdout=f,
                                      stderr=subprocess.STDOUT, **options)
            with log.open(errors='replace') as f:
                f.seek(start)
                proc.stdout = f.read()
        elif stdout is not None:
            with stdout.open('wb') as f:
                proc = subprocess.run(argv, stdout=f, stderr=subprocess.PIPE,
                                      text=True, errors='replace', **options)
            proc.stdout = proc.stderr
        else:
            proc = subprocess.run(argv, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  errors='replace', **options)
    except FileNotFoundError:
        raise BootTestError(f'{argv[0]}: command not found; install it')\
            from None
    except subprocess.TimeoutExpired as e:
        raise Timeout(f'{shlex.join(argv)}: timed out after '
                      f'{e.timeout:.0f} s') from None
    if check and proc.returncode != 0:
        where = f' (full log: {log})' if log else ''
        sys.stderr.write(tail(proc.stdout) + '\n')
        raise BootTestError(f'{shlex.join(argv)}: exit status '
                            f'{proc.returncode}{where}')
    return proc


def need_tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BootTestError(f'{name}: not found; install it '
                            f'(apt-get install {package})')
    return path


# --- kernel configuration -------------------------------------------------

CONFIG_LINE = re.compile(r'^(?:(?P<name>CONFIG_\w+)=(?P<value>.*)'
                         r'|# (?P<unset>CONFIG_\w+) is not set)$')


def parse_config(text: str) -> dict[str, str]:
    """Kconfig lines to {name: value}; "is not set" becomes "n"."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        m = CONFIG_LINE.match(line.strip())
        if m is None:
            continue
        if m.group('unset'):
            options[m.group('unset')] = 'n'
        else:
            options[m.group('name')] = m.group('value')
    return options


def merge_config(config: str, fragment: str) -> str:
    """The .config text with the fragment's options replacing its own.

    Like scripts/kconfig/merge_config.sh: the fragment's lines go at the
    end, and the lines of .config for the same options are dropped.
    """
    wanted = parse_config(fragment)
    kept = []
    for line in config.splitlines():
        m = CONFIG_LINE.match(line.strip())
        name = m and (m.group('name') or m.group('unset'))
        if name not in wanted:
            kept.append(line)
    added = [line.strip() for line in fragment.splitlines()
             if CONFIG_LINE.match(line.strip())]
    return '\n'.join(kept + added) + '\n'


def missing_options(fragment: str, config: str) -> list[str]:
    """What of the fragment did not survive olddefconfig, one per option."""
    have = parse_config(config)
    missing = []
    for name, value in parse_config(fragment).items():
        got = have.get(name, 'n')
        if got != value:
            shown = 'not set' if got == 'n' else got
            missing.append(f'{name}={value} requested, {shown} in .config')
    return missing


# --- KTAP -----------------------------------------------------------------

RESULT_LINE = re.compile(r'^(?P<not>not )?ok (?P<number>\d+)'
                         r'(?: (?P<name>[^#]*?))?'
                         r'\s*(?:#\s*(?P<directive>.*))?$')
PLAN_LINE = re.compile(r'^1\.\.(?P<count>\d+)$')
HEADER_LINE = re.compile(r'^(?:KTAP version \d+|TAP version \d+)$')
PRINTK_PREFIX = re.compile(r'^\[\s*\d+\.\d+\] ?')


def parse_ktap(text: str) -> tuple[Optional[int], list[TestCase]]:
    """The plan and the top-level results of a KTAP document.

    Diagnostic lines ("# ...") and indented lines (nested subtests) that
    follow a result belong to the next result line, as KTAP prints
    subtests before their result; diagnostics after a result belong to it.
    """
    plan: Optional[int] = None
    cases: list[TestCase] = []
    pending: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip('\r\n')
        if not line.strip():
            continue
        if line.startswith((' ', '\t')):
            pending.append(line)
            continue
        if HEADER_LINE.match(line):
            continue
        m = PLAN_LINE.match(line)
        if m:
            plan = int(m.group('count'))
            continue
        m = RESULT_LINE.match(line)
        if m:
            directive = (m.group('directive') or '').strip()
            ok = not m.group('not') or directive.upper().startswith('SKIP')
            cases.append(TestCase(name=(m.group('name') or '').strip(),
                                  ok=ok, subtest=pending))
            pending = []
            continue
        if line.startswith('#') and cases:
            cases[-1].diagnostics.append(line[1:].strip())
    return plan, cases


def kernel_lines(serial: str) -> list[str]:
    """The printk lines of a serial log, without their timestamps.

    Lines without a timestamp (the guest's /init writing to the console)
    are left out, so that its KTAP cannot be mistaken for KUnit's.
    """
    lines = []
    for raw in serial.splitlines():
        line = raw.rstrip('\r\n')
        m = PRINTK_PREFIX.match(line)
        if m:
            lines.append(line[m.end():])
    return lines


def kunit_ktap(serial: str) -> str:
    """KUnit's KTAP document from the serial log ("" if it did not run)."""
    lines = kernel_lines(serial)
    for start, line in enumerate(lines):
        if HEADER_LINE.match(line):
            break
    else:
        return ''
    block = []
    plan: Optional[int] = None
    results = 0
    for line in lines[start:]:
        if plan is not None and results >= plan:
            break
        if plan is None and PLAN_LINE.match(line):
            plan = int(line[3:])
        elif RESULT_LINE.match(line):
            results += 1
        block.append(line)
    return '\n'.join(block) + '\n'


def kunit_cases(serial: str,
                required: Iterable[str] = REQUIRED_KUNIT_SUITES
                ) -> list[TestCase]:
    """One case per KUnit suite in the log, plus the required ones missing."""
    _, suites = parse_ktap(kunit_ktap(serial))
    cases = [TestCase(f'kunit_{s.name}', s.ok, s.diagnostics, s.subtest)
             for s in suites]
    seen = {s.name for s in suites}
    for name in required:
        if name not in seen:
            cases.append(TestCase(f'kunit_{name}', False, [
                f'KUnit suite {name} did not run (not built in?)']))
    return cases


def format_ktap(cases: Sequence[TestCase]) -> str:
    lines = ['KTAP version 1', f'1..{len(cases)}']
    for number, case in enumerate(cases, 1):
        lines.extend(case.subtest)
        lines.append(f'{"ok" if case.ok else "not ok"} {number} {case.name}')
        lines.extend(f'# {d}' if d else '#' for d in case.diagnostics)
    return '\n'.join(lines) + '\n'


def summary(cases: Sequence[TestCase]) -> str:
    passed = sum(case.ok for case in cases)
    return f'{passed} passed, {len(cases) - passed} failed'


# --- QEMU -----------------------------------------------------------------

def kernel_cmdline() -> str:
    # panic=-1 with -no-reboot: a panic ends QEMU at once instead of hanging.
    return 'console=ttyS0 panic=-1 oops=panic'


def qemu_command(accel: str, kernel: Path, initrd: Path, serial_log: Path,
                 ktap_log: Path) -> list[str]:
    """The QEMU command line: ttyS0 is the console, ttyS1 the KTAP."""
    cmd = ['qemu-system-x86_64', '-accel', accel]
    if accel == 'kvm':
        cmd += ['-cpu', 'host']
    cmd += ['-m', '512', '-smp', '1', '-nodefaults', '-display', 'none',
            '-no-reboot', '-monitor', 'none',
            '-serial', f'file:{serial_log}', '-serial', f'file:{ktap_log}',
            '-kernel', str(kernel), '-initrd', str(initrd),
            '-append', kernel_cmdline()]
    return cmd


# A boot sector that writes 1 to the isa-debug-exit port: QEMU exits with 3.
PROBE_BOOT_SECTOR = (bytes([0xb0, 0x01, 0xe6, 0xf4, 0xf4]).ljust(510, b'\0')
                     + b'\x55\xaa')
PROBE_EXIT = 3


def probe_kvm(scratch: Path) -> Optional[str]:
    """None if KVM runs guest code, else why not."""
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return '/dev/kvm is missing or not accessible'
    image = scratch / 'kvm-probe.img'
    image.write_bytes(PROBE_BOOT_SECTOR)
    cmd = ['qemu-system-x86_64', '-accel', 'kvm', '-cpu', 'host',
           '-nodefaults', '-display', 'none', '-no-reboot',
           '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04',
           '-drive', f'file={image},format=raw']
    try:
        proc = run(cmd, timeout=PROBE_TIMEOUT, check=False)
    except BootTestError as e:
        return str(e)
    if proc.returncode != PROBE_EXIT:
        how = (f'was killed by signal {-proc.returncode}'
               if proc.returncode < 0 else f'exited with {proc.returncode}')
        return f'the probe {how}: {tail(proc.stdout, 1)}'
    return None


# --- phases ---------------------------------------------------------------

def phase_apply(r: Run) -> None:
    for path in ('Makefile', 'kernel/module/main.c', 'scripts/mod/modpost.c'):
        if not (r.ksrc / path).is_file():
            raise BootTestError(f'{r.ksrc}: not a kernel tree (no {path}); '
                                'pass --ksrc with the patched tree')
    version = run(['make', '-s', '-C', r.ksrc, 'kernelversion']).stdout
    print(f'tree: {r.ksrc} ({version.strip()})', file=sys.stderr)


def make_cmd(r: Run, *targets: str) -> list[str]:
    return ['make', '-C', str(r.ksrc), f'O={r.build_dir}', f'CC={r.cc}',
            f'-j{r.jobs}', *targets]


def config_stamp(r: Run) -> str:
    """What the .config depends on; the same stamp means no need to redo it."""
    h = hashlib.sha256()
    for part in (str(r.ksrc), r.cc, FRAGMENT.read_text(),
                 (r.ksrc / 'arch/x86/configs/x86_64_defconfig').read_text()):
        h.update(part.encode() + b'\0')
    return h.hexdigest()


def phase_build(r: Run) -> None:
    r.build_dir.mkdir(parents=True, exist_ok=True)
    log = r.out / 'build.log'
    log.write_text('')
    config = r.build_dir / '.config'
    stamp_file = r.build_dir / CONFIG_STAMP
    stamp = config_stamp(r)
    if (config.is_file() and stamp_file.is_file()
            and stamp_file.read_text().strip() == stamp):
        print('config: up to date, not redone', file=sys.stderr)
    else:
        run(make_cmd(r, 'defconfig'), env=r.env, log=log)
        config.write_text(merge_config(config.read_text(),
                                       FRAGMENT.read_text()))
        run(make_cmd(r, 'olddefconfig'), env=r.env, log=log)
        stamp_file.write_text(stamp + '\n')
    missing = missing_options(FRAGMENT.read_text(), config.read_text())
    for line in missing:
        print(f'config: {line}', file=sys.stderr)
    r.cases.append(TestCase('config_fragment_applied', not missing, missing))
    cmd = make_cmd(r, 'bzImage', 'modules')
    print(f'build: {shlex.join(cmd)} (log: {log})', file=sys.stderr)
    run(cmd, env=r.env, log=log, timeout=BUILD_TIMEOUT)
    shutil.copy2(r.build_dir / 'Module.symvers', r.out / 'Module.symvers')
    (r.out / 'build-dir').write_text(f'{r.build_dir.resolve()}\n')


def copy_if_changed(src: Path, dst: Path) -> None:
    """Copy, keeping dst's timestamp when nothing changed (make stays idle)."""
    if not dst.is_file() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)


def module_dir(r: Run, name: str, default_modpost: bool = False) -> Path:
    sub = f'modpost-{name}' if default_modpost else name
    return r.build_dir / 'boot-test-modules' / sub


def module_make(r: Run, mdir: Path, source: Path, name: str) -> list[str]:
    """Set up mdir to build source as module name; the make command for it
    (its target and options still to add)."""
    mdir.mkdir(parents=True, exist_ok=True)
    copy_if_changed(source, mdir / f'{name}.c')
    kbuild = mdir / 'Kbuild'
    if not kbuild.is_file():
        kbuild.write_text(f'obj-m := {name}.o\n')
    return ['make', '-C', str(r.build_dir), f'M={mdir}', f'CC={r.cc}']


def build_module(r: Run, spec: ModuleSpec, default_modpost: bool
                 ) -> subprocess.CompletedProcess[str]:
    """make M= for one module in its own directory under the build dir.

    Modules the loader must refuse are built with modpost's errors as
    warnings (KBUILD_MODPOST_WARN=1; a missing namespace import only
    becomes a warning with -N, so CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_
    IMPORTS is set for modpost alone: the kernel's own config is not).
    default_modpost builds with none of that, to see modpost stop them.
    """
    mdir = module_dir(r, spec.name, default_modpost)
    cmd = module_make(r, mdir, MODULES_SRC / f'{spec.name}.c', spec.name)
    if spec.refused_by_loader and not default_modpost:
        cmd += ['KBUILD_MODPOST_WARN=1',
                'CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_IMPORTS=y']
    cmd.append('modules')
    return run(cmd, env=r.env, check=False)


def modpost_case(spec: ModuleSpec,
                 proc: subprocess.CompletedProcess[str]) -> TestCase:
    """Did a default build of spec stop in modpost with its message?"""
    name = f'modpost_stops_{spec.name}'
    found = [m for m in spec.modpost_messages if m in proc.stdout]
    if proc.returncode != 0 and found:
        return TestCase(name, True)
    why = ('the build succeeded' if proc.returncode == 0
           else 'the build failed without the expected message')
    diagnostics = [why] + [f'expected: {m}' for m in spec.modpost_messages]
    diagnostics += [line for line in proc.stdout.splitlines()
                    if line.startswith(('ERROR: modpost', 'WARNING: modpost'))]
    return TestCase(name, False, diagnostics)


def phase_modules(r: Run) -> None:
    jobs: list[tuple[ModuleSpec, bool]] = [(s, False) for s in MODULES]
    jobs += [(s, True) for s in MODULES if s.modpost_messages]
    with ThreadPoolExecutor(max_workers=r.jobs) as pool:
        procs = list(pool.map(lambda j: build_module(r, *j), jobs))
    log = r.out / 'modules.log'
    with log.open('w') as f:
        for (spec, default_modpost), proc in zip(jobs, procs):
            how = ' (default modpost)' if default_modpost else ''
            f.write(f'### {spec.name}{how}: exit {proc.returncode}\n'
                    f'{proc.stdout}')
            if not default_modpost and proc.returncode != 0:
                # No stale .ko of an earlier run in the initramfs.
                ko = module_dir(r, spec.name) / f'{spec.name}.ko'
                ko.unlink(missing_ok=True)
                print(f'modules: {spec.name} did not build, see {log}:\n'
                      f'{tail(proc.stdout, 5)}', file=sys.stderr)
            if default_modpost:
                r.cases.append(modpost_case(spec, proc))
    r.cases.append(nsdeps_case(r))


NSDEPS_SOURCE = MODULES_SRC / 'nsdeps_kvm.c'
NSDEPS_EXPECTED = ['MODULE_IMPORT_NS("DMA_BUF");']


def imports_of(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines()
            if line.strip().startswith('MODULE_IMPORT_NS(')]


def nsdeps_case(r: Run) -> TestCase:
    """make nsdeps on a module named kvm that imports nothing, twice.

    It must add the quoted DMA_BUF import (the generated series converts
    scripts/nsdeps) and never one of "module:kvm"; the second run must
    find nothing to add.  modpost's errors are warnings here (an M= build
    may not use fpu_swap_kvm_fpstate even as kvm), else nsdeps stops.
    """
    name = 'nsdeps_adds_quoted_import_never_module_ns'
    mdir = module_dir(r, 'nsdeps')
    cmd = module_make(r, mdir, NSDEPS_SOURCE, 'kvm')
    cmd += ['KBUILD_MODPOST_WARN=1', 'nsdeps']
    source = mdir / 'kvm.c'
    log = r.out / 'nsdeps.log'
    log.write_text('')
    for attempt in ('first', 'second'):
        proc = run(cmd, env=r.env, log=log, check=False)
        if proc.returncode != 0:
            return TestCase(name, False, [
                f'{attempt} make nsdeps: exit {proc.returncode} (see {log})',
                *tail(proc.stdout, 5).splitlines()])
        imports = imports_of(source.read_text())
        if imports != NSDEPS_EXPECTED:
            return TestCase(name, False, [
                f'after the {attempt} make nsdeps the imports are '
                f'{imports or "none"}, expected {NSDEPS_EXPECTED}'])
        added = [line for line in proc.stdout.splitlines()
                 if line.startswith('Adding namespace')]
        if attempt == 'second' and added:
            return TestCase(name, False, [
                'the second make nsdeps still found imports missing '
                f'(see {log}):', *added])
    return TestCase(name, True)


def initramfs_list(r: Run) -> str:
    """The list file with one line per test module that was built."""
    lines = [INITRAMFS_LIST.read_text().rstrip('\n')]
    for spec in sorted(MODULES):
        ko = module_dir(r, spec.name) / f'{spec.name}.ko'
        if ko.is_file():
            lines.append(f'file /modules/{spec.name}.ko {ko} 0644 0 0')
    return '\n'.join(lines) + '\n'


def phase_initramfs(r: Run) -> None:
    busybox = need_tool('busybox', 'busybox-static')
    if b'/ld-linux' in Path(busybox).read_bytes()[:4096]:
        raise BootTestError(f'{busybox}: dynamically linked; install '
                            'busybox-static')
    gen = r.build_dir / 'usr' / 'gen_init_cpio'
    if not gen.is_file():
        raise BootTestError(f'{gen}: missing; is CONFIG_BLK_DEV_INITRD set?')
    listing = r.out / 'initramfs.list'
    listing.write_text(initramfs_list(r))
    env = {'BUSYBOX': busybox, 'INIT': str(INIT),
           'KBUILD': str(r.build_dir)}
    cpio = r.out / 'initramfs.cpio'
    run([gen, '-t', '0', listing], env=env, stdout=cpio)
    # Like gzip -n: no name, time 0, so the same inputs give the same bytes.
    with (r.out / 'initramfs.cpio.gz').open('wb') as f, gzip.GzipFile(
            filename='', mode='wb', fileobj=f, mtime=0) as gz:
        gz.write(cpio.read_bytes())
    cpio.unlink()


class Silent(BootTestError):
    """The guest wrote nothing to its console in time (and was killed)."""


def run_guest(cmd: Sequence[str], serial: Path, timeout: float,
              silence: Optional[float] = None
              ) -> subprocess.CompletedProcess[str]:
    """Run QEMU to its end; Timeout past timeout seconds.

    With silence given, Silent once that many seconds pass with the serial
    log still empty: the accelerator runs nothing.
    """
    start = time.monotonic()
    # QEMU's own messages go to a file: a pipe nobody reads could fill up.
    with tempfile.TemporaryFile('w+', errors='replace') as messages, \
            subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=messages,
                             stderr=subprocess.STDOUT) as proc:
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            quiet = (silence is not None and elapsed > silence
                     and not (serial.is_file() and serial.stat().st_size))
            if quiet or elapsed > timeout:
                proc.kill()
                proc.wait()
                if quiet:
                    raise Silent(f'no console output within {silence:.0f} s')
                raise Timeout(f'no power-off within {timeout:.0f} s (hang?)')
            time.sleep(0.1)
        messages.seek(0)
        out = messages.read()
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


def boot_once(r: Run, accel: str, serial: Path, ktap: Path,
              silence: Optional[float] = None) -> list[str]:
    """Boot the guest once; the problems seen, empty if it powered off."""
    print(f'boot: {accel}', file=sys.stderr)
    for path in (serial, ktap):
        path.unlink(missing_ok=True)
    cmd = qemu_command(accel, r.build_dir / 'arch/x86/boot/bzImage',
                       r.out / 'initramfs.cpio.gz', serial, ktap)
    start = time.monotonic()
    try:
        proc = run_guest(cmd, serial, r.timeout, silence)
    except Timeout as e:
        return [str(e)]
    finally:
        print(f'boot: {accel}: {time.monotonic() - start:.1f} s',
              file=sys.stderr)
    if proc.returncode != 0:
        return [f'qemu exited with {proc.returncode}: {tail(proc.stdout, 1)}']
    return []


def boot(r: Run, serial: Path, ktap: Path) -> list[str]:
    """Boot with the chosen accelerator, or KVM if it works, else TCG."""
    if r.accel != 'auto':
        return boot_once(r, r.accel, serial, ktap)
    why = probe_kvm(r.out)
    if why is None:
        try:
            return boot_once(r, 'kvm', serial, ktap,
                             silence=KVM_SILENCE_TIMEOUT)
        except Silent as e:
            why = f'it ran the probe, but the kernel printed nothing: {e}'
    print(f'boot: KVM does not work ({why}); falling back to TCG',
          file=sys.stderr)
    return boot_once(r, 'tcg', serial, ktap)


def phase_boot(r: Run) -> None:
    need_tool('qemu-system-x86_64', 'qemu-system-x86')
    serial, ktap = r.out / 'serial.log', r.out / 'guest.ktap'
    problems = boot(r, serial, ktap)
    log = serial.read_text(errors='replace') if serial.is_file() else ''
    panic = re.search(r'Kernel panic - not syncing.*', log)
    if panic:
        problems.append(panic.group(0).strip())
    plan, cases = parse_ktap(ktap.read_text(errors='replace')
                             if ktap.is_file() else '')
    if plan is None:
        problems.append('the guest printed no KTAP plan')
    elif len(cases) != plan:
        problems.append(f'the guest gave {len(cases)} of {plan} verdicts')
    if problems:
        print(f'boot: {"; ".join(problems)}; last lines of {serial}:\n'
              f'{tail(log)}', file=sys.stderr)
    r.cases.append(TestCase('guest_boots_and_powers_off', not problems,
                            problems))
    r.cases.extend(cases)


def phase_parse(r: Run) -> None:
    serial = r.out / 'serial.log'
    log = serial.read_text(errors='replace') if serial.is_file() else ''
    r.cases.extend(kunit_cases(log))


PHASES: dict[str, Callable[[Run], None]] = {
    'apply': phase_apply,
    'build': phase_build,
    'modules': phase_modules,
    'initramfs': phase_initramfs,
    'boot': phase_boot,
    'parse': phase_parse,
}


def default_build_dir() -> Path:
    workdir = os.environ.get('WORKDIR') or Path.home() / '.cache' / 'ns-series'
    return Path(workdir) / 'build-boot-test'


def setup_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='run.py',
        description='Build a kernel tree that carries the namespace series, '
        'boot it in QEMU with the test modules and report KTAP.',
        epilog='Needs make, gcc, qemu-system-x86_64 (qemu-system-x86), '
        'busybox (busybox-static); uses ccache if installed.')
    parser.add_argument('--ksrc', type=Path, required=True,
                        help='kernel source tree with the series applied '
                        '(only read: the build is out of tree)')
    parser.add_argument('--build-dir', type=Path, default=default_build_dir(),
                        help='kernel build directory, reused between runs '
                        '(default: $WORKDIR/build-boot-test, %(default)s)')
    parser.add_argument('--out', type=Path, default=REPO / 'out' / 'boot-test',
                        help='results directory (default: %(default)s)')
    parser.add_argument('--jobs', '-j', type=int, default=os.cpu_count() or 1,
                        help='parallel make jobs (default: %(default)s)')
    parser.add_argument('--timeout', type=float, default=120,
                        help='seconds the guest gets to power off '
                        '(default: %(default)s)')
    parser.add_argument('--accel', choices=('auto', 'kvm', 'tcg'),
                        default='auto',
                        help='QEMU accelerator; auto probes KVM and falls '
                        'back to TCG (default: %(default)s)')
    return parser


def make_run(args: argparse.Namespace) -> Run:
    ksrc = args.ksrc.resolve()
    build_dir = args.build_dir.resolve()
    r = Run(ksrc=ksrc, build_dir=build_dir, out=args.out.resolve(),
            jobs=max(1, args.jobs), timeout=args.timeout, accel=args.accel)
    if shutil.which('ccache'):
        r.cc = 'ccache gcc'
        # Paths relative to the common parent: trees at the same place
        # relative to their build directories share the cache.
        base = os.path.commonpath([ksrc, build_dir])
        if 'CCACHE_BASEDIR' not in os.environ and base != '/':
            r.env['CCACHE_BASEDIR'] = base
    else:
        print('build: ccache not installed, building without it',
              file=sys.stderr)
    return r


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = setup_parser().parse_args(argv)
    r = make_run(args)
    r.out.mkdir(parents=True, exist_ok=True)
    phases: list[PhaseResult] = []
    error = None
    for name, handler in PHASES.items():
        start = time.monotonic()
        try:
            handler(r)
            status = Status.SUCCESS
        except BootTestError as e:
            error = f'{name}: {e}'
            status = Status.FAILURE
        phases.append(PhaseResult(name, status, time.monotonic() - start))
        print(f'phase {name}: {phases[-1].elapsed:.1f} s '
              f'({status.value})', file=sys.stderr)
        if error:
            break
    (r.out / 'results.ktap').write_text(format_ktap(r.cases))
    for case in r.cases:
        if not case.ok:
            print(f'not ok {case.name}', file=sys.stderr)
    if error:
        print(f'boot-test: error: {error}', file=sys.stderr)
    print(summary(r.cases))
    failed = error is not None or not all(case.ok for case in r.cases)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
