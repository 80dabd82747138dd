#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Boot-test a kernel tree that carries the namespace series.

Steps (each a subcommand; 'run', the default, does them all in order):
  config     x86_64 defconfig + config.fragment (merge_config.sh), checked
  build      bzImage and modules, out of tree in --build-dir (reused);
             modules_install into a staging directory signs them
  modules    the test modules of modules/, modpost's and nsdeps' checks
  initramfs  busybox-static, /init, guest-cases and the modules
  boot       qemu-system-x86_64: KVM if it runs a kernel, else TCG (said)
  results    results.ktap from all of the above, read with the tree's
             tools/testing/kunit/kunit_parser.py; the summary line

Writes results.ktap, serial.log, guest.ktap, Module.symvers, the build
logs and steps.txt (the time of each step) into --out.  The last line on
stdout is "N passed, N failed"; the exit status is non-zero on any failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

import boot_config  # noqa: E402
import boot_dkms  # noqa: E402
import boot_initramfs  # noqa: E402
import boot_intree  # noqa: E402
import boot_kernel  # noqa: E402
import boot_keys  # noqa: E402
import boot_modules  # noqa: E402
import boot_qemu  # noqa: E402
import boot_rebuild  # noqa: E402
import boot_results  # noqa: E402
from boot_results import Case, Status  # noqa: E402
from nsgen import kbuild, tree  # noqa: E402
from nsgen.run import ToolError, progress, tail  # noqa: E402


@dataclasses.dataclass
class Context:
    """What the steps share."""
    build: boot_kernel.Build
    out: Path
    timeout: float
    accel: str

    def cases_file(self, step: str) -> Path:
        return self.out / 'cases' / f'{step}.json'


def step_config(c: Context) -> None:
    version = boot_kernel.check_tree(c.build)
    progress(f'tree: {c.build.ksrc} ({version})')
    log = c.out / 'build.log'
    log.write_text('')
    boot_results.save_cases(c.cases_file('config'), [
        boot_config.configure(c.build, log)])


def step_build(c: Context) -> None:
    boot_kernel.build_kernel(c.build, c.out / 'build.log')
    boot_kernel.keep_outputs(c.build, c.out)
    boot_keys.install_modules(c.build, c.out / 'install.log')


def step_modules(c: Context) -> None:
    boot_results.save_cases(c.cases_file('modules'), boot_modules.build_all(
        c.build, c.out / 'modules.log')
        + boot_intree.cases(c.build, c.out / 'intree.log')
        + boot_rebuild.build(c.build, c.out / 'rebuild.log')
        + boot_dkms.build_all(c.build, c.out / 'dkms.log'))


def step_initramfs(c: Context) -> None:
    boot_initramfs.make_initramfs(c.build.build_dir,
                                  boot_modules.built(c.build)
                                  + boot_rebuild.built(c.build)
                                  + boot_dkms.built(c.build), c.out,
                                  {**boot_modules.skipped(c.build),
                                   **boot_rebuild.skipped(c.build),
                                   **boot_dkms.skipped(c.build)},
                                  boot_keys.installed_modules(c.build),
                                  boot_keys.keys_dir(c.build))


# The second boot: same kernel and initramfs, signatures enforced.
ENFORCE_ARGS = f'module.sig_enforce=1 boottest.cases={boot_initramfs.ENFORCE}'


def step_boot(c: Context) -> None:
    kernel = c.build.build_dir / 'arch/x86/boot/bzImage'
    initrd = c.out / 'initramfs.cpio.gz'
    accel, problems = boot_qemu.boot(c.accel, kernel, initrd, c.out,
                                     c.timeout)
    enforce = boot_qemu.boot_once(accel, kernel, initrd,
                                  c.out / 'serial-enforce.log',
                                  c.out / 'guest-enforce.ktap', c.timeout,
                                  extra=ENFORCE_ARGS)
    (c.out / 'boot.json').write_text(json.dumps(
        {'accel': accel, 'problems': problems,
         'enforce_problems': enforce}) + '\n')


def booted_release_problems(serial: str, built: str) -> list[str]:
    """The guest must run the kernel this build made (a stale bzImage
    boots an earlier one, whose modules then all fail)."""
    m = re.search(r'Linux version (\S+)', serial)
    if not built or m is None or m.group(1) == built:
        return []
    return [f'the guest booted Linux {m.group(1)}, the build made {built}']


def boot_cases(c: Context, serial: str, kunit: Sequence[str]) -> list[Case]:
    """The host's view of the boot: it powered off cleanly, and every
    KUnit suite that the configuration builds in ran."""
    record = c.out / 'boot.json'
    if not record.is_file():
        return [Case('guest_boots_and_powers_off', Status.FAIL,
                     ['the guest was not booted'])]
    problems = list(json.loads(record.read_text())['problems'])
    for line in serial.splitlines():
        if 'Kernel panic - not syncing' in line:
            problems.append(line[line.index('Kernel panic'):].strip())
            break
    problems += booted_release_problems(
        serial, boot_kernel.kernel_release(c.build))
    cases = [Case('guest_boots_and_powers_off',
                  Status.FAIL if problems else Status.PASS, problems)]
    for suite in boot_config.kunit_suites(c.build.ksrc):
        ran = any(line.strip() == f'# Subtest: {suite}' for line in kunit)
        cases.append(Case(f'kunit_suite_{suite}_ran',
                          Status.PASS if ran else Status.FAIL,
                          [] if ran else [f'KUnit suite {suite} printed '
                                          'nothing (not built in?)']))
    return cases


def guest_document(parser: object, path: Path, booted: Case, serial: str,
                   serial_name: str, expected: Sequence[str]) -> list[str]:
    """A boot's guest KTAP, a failed verdict for every case it did not
    reach."""
    guest = (path.read_text(errors='replace').replace('\r', '')
             .splitlines() if path.is_file() else [])
    why = ('the guest stopped before this case'
           if booted.status is Status.PASS
           else '; '.join(booted.diagnostics))
    return boot_results.complete_guest(
        parser, guest, expected, why,
        [f'{serial_name}: {line}' for line in tail(serial, 10).splitlines()])


def enforce_boot_case(c: Context) -> Case:
    """The second boot (module.sig_enforce=1) powered off cleanly."""
    name = 'guest_boots_with_sig_enforce_and_powers_off'
    record = c.out / 'boot.json'
    if not record.is_file():
        return Case(name, Status.FAIL, ['the guest was not booted'])
    problems = list(json.loads(record.read_text()).get(
        'enforce_problems', ['not booted (an older boot.json)']))
    serial = c.out / 'serial-enforce.log'
    text = serial.read_text(errors='replace') if serial.is_file() else ''
    for line in text.splitlines():
        if 'Kernel panic - not syncing' in line:
            problems.append(line[line.index('Kernel panic'):].strip())
            break
    return Case(name, Status.FAIL if problems else Status.PASS, problems)


def step_results(c: Context, error: Optional[str] = None) -> int:
    parser = boot_results.load_parser(c.build.ksrc)
    serial_path = c.out / 'serial.log'
    serial = (serial_path.read_text(errors='replace')
              if serial_path.is_file() else '')
    kunit = boot_results.kunit_document(parser, serial)
    build = (boot_results.load_cases(c.cases_file('config'))
             + boot_results.load_cases(c.cases_file('modules')))
    if error is not None:
        build.append(Case('boot_test_steps', Status.FAIL, [error]))
    boot = boot_cases(c, serial, kunit)
    guest = guest_document(parser, c.out / 'guest.ktap', boot[0], serial,
                           'serial.log', boot_initramfs.guest_cases())
    enforce = enforce_boot_case(c)
    serial_enforce_path = c.out / 'serial-enforce.log'
    serial_enforce = (serial_enforce_path.read_text(errors='replace')
                      if serial_enforce_path.is_file() else '')
    guest_enforce = guest_document(
        parser, c.out / 'guest-enforce.ktap', enforce, serial_enforce,
        'serial-enforce.log',
        boot_initramfs.guest_cases(boot_initramfs.GUEST_CASES_ENFORCE))
    suites = [('build', boot_results.suite_of_cases(build)),
              ('boot', boot_results.suite_of_cases([*boot, enforce])),
              ('guest', guest),
              ('guest_sig_enforce', guest_enforce)]
    if kunit:
        suites.append(('kunit', kunit))
    results = boot_results.assemble(parser, suites)
    (c.out / 'results.ktap').write_text(results.text)
    if results.parsed.errors:
        progress(f'results: kunit_parser found {results.parsed.errors} '
                 f'error(s) in results.ktap:\n{results.parsed.messages}')
    if not results.ok:
        progress(f'results: failures; see {c.out}/results.ktap and '
                 f'{serial_path}')
    print(results.summary())
    return 0 if results.ok else 1


STEPS: dict[str, Callable[[Context], None]] = {
    'config': step_config,
    'build': step_build,
    'modules': step_modules,
    'initramfs': step_initramfs,
    'boot': step_boot,
}
# What a full run starts without: nothing of an earlier run is read back.
STALE = ('cases', 'boot.json', 'guest.ktap', 'serial.log', 'results.ktap',
         'steps.txt', 'guest-enforce.ktap', 'serial-enforce.log')


def run_all(c: Context) -> int:
    for name in STALE:
        path = c.out / name
        if path.is_dir():
            for f in path.iterdir():
                f.unlink()
        else:
            path.unlink(missing_ok=True)
    error = None
    times = []
    for name, step in STEPS.items():
        start = time.monotonic()
        try:
            step(c)
        except ToolError as e:
            error = f'{name}: {e}'
        times.append(f'{name} {time.monotonic() - start:.1f} s'
                     f'{" (failed)" if error else ""}')
        progress(f'step {times[-1]}')
        if error:
            progress(f'boot-test: error: {error}')
            break
    (c.out / 'steps.txt').write_text('\n'.join(times) + '\n')
    return step_results(c, error)


def setup_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='run.py', description=__doc__.split('\n\n')[0],
        epilog='Needs make, gcc, qemu-system-x86_64 (qemu-system-x86), '
        'busybox (busybox-static).')
    parser.add_argument('step', nargs='?', default='run',
                        choices=['run', *STEPS, 'results'],
                        help='the step to run (default: run, every step)')
    parser.add_argument('--ksrc', type=Path, required=True,
                        help='kernel source tree with the series applied '
                        '(only read: the build is out of tree)')
    parser.add_argument('--build-dir', type=Path,
                        default=tree.default_workdir() / 'build-boot-test',
                        help='kernel build directory, reused between runs '
                        '(default: %(default)s)')
    parser.add_argument('--out', type=Path, default=REPO / 'out' / 'boot-test',
                        help='results directory (default: %(default)s)')
    parser.add_argument('--jobs', '-j', type=int, default=os.cpu_count() or 1,
                        help='parallel make jobs (default: %(default)s)')
    parser.add_argument('--cc-wrapper', default=kbuild.AUTO,
                        help='compiler wrapper: ccache, distcc, icecc, '
                        '"ccache distcc", "" for none (default: %(default)s:'
                        ' ccache if installed)')
    parser.add_argument('--timeout', type=float, default=120,
                        help='seconds the guest gets to power off '
                        '(default: %(default)s)')
    parser.add_argument('--accel', choices=('auto', 'kvm', 'tcg'),
                        default='auto',
                        help='QEMU accelerator; auto probes KVM and falls '
                        'back to TCG (default: %(default)s)')
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = setup_parser().parse_args(argv)
    try:
        c = Context(boot_kernel.Build.of(args.ksrc, args.build_dir,
                                         args.jobs, args.cc_wrapper),
                    args.out.resolve(), args.timeout, args.accel)
        c.out.mkdir(parents=True, exist_ok=True)
        if args.step == 'run':
            return run_all(c)
        if args.step == 'results':
            return step_results(c)
        STEPS[args.step](c)
        return 0
    except (ToolError, FileNotFoundError) as e:
        print(f'boot-test: error: {e}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
