# SPDX-License-Identifier: GPL-2.0-only
"""Booting the guest in QEMU.

KVM is used only if it runs a kernel: a boot sector probes /dev/kvm, and a
kernel that prints nothing on its console within a few seconds under KVM
is killed and booted again under TCG.  Every fallback is said out loud.
ttyS0 is the console (serial.log), ttyS1 the guest's KTAP (guest.ktap).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Optional

from nsgen.run import Stopped, Timeout, ToolError, progress, run, tail

PROBE_TIMEOUT = 10
# A kernel under KVM reaches its serial console in well under a second; a
# KVM that runs the probe's real-mode code but not a kernel prints nothing.
KVM_SILENCE_TIMEOUT = 5
# panic=-1 with -no-reboot: a panic ends QEMU at once instead of hanging.
CMDLINE = 'console=ttyS0 panic=-1 oops=panic'
# A boot sector that writes 1 to the isa-debug-exit port: QEMU exits with 3.
PROBE_BOOT_SECTOR = (bytes([0xb0, 0x01, 0xe6, 0xf4, 0xf4]).ljust(510, b'\0')
                     + b'\x55\xaa')
PROBE_EXIT = 3


def qemu_command(accel: str, kernel: Path, initrd: Path, serial_log: Path,
                 ktap_log: Path, extra: str = '') -> list[str]:
    """The QEMU command line: ttyS0 is the console, ttyS1 the KTAP."""
    cmd = ['qemu-system-x86_64', '-accel', accel]
    if accel == 'kvm':
        cmd += ['-cpu', 'host']
    cmd += ['-m', '512', '-smp', '1', '-nodefaults', '-display', 'none',
            '-no-reboot', '-monitor', 'none',
            '-serial', f'file:{serial_log}', '-serial', f'file:{ktap_log}',
            '-kernel', str(kernel), '-initrd', str(initrd),
            '-append', f'{CMDLINE} {extra}'.strip()]
    return cmd


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
    except ToolError as e:
        return str(e)
    if proc.returncode != PROBE_EXIT:
        how = (f'was killed by signal {-proc.returncode}'
               if proc.returncode < 0 else f'exited with {proc.returncode}')
        return f'the probe {how}: {tail(proc.stdout + proc.stderr, 1)}'
    return None


def silence_watch(serial: Path, silence: float) -> Callable[[], Optional[str]]:
    """A watch for run(): objects once silence seconds pass with the
    serial log still empty (the accelerator runs nothing)."""
    start = time.monotonic()

    def watch() -> Optional[str]:
        if time.monotonic() - start < silence:
            return None
        if serial.is_file() and serial.stat().st_size:
            return None
        return f'no console output within {silence:.0f} s'
    return watch


def boot_once(accel: str, kernel: Path, initrd: Path, serial: Path,
              ktap: Path, timeout: float,
              silence: Optional[float] = None, extra: str = '') -> list[str]:
    """Boot the guest once (extra: more kernel parameters); the problems
    seen, empty if it powered off.  Stopped if silence was given and the
    guest said nothing in time."""
    progress(f'boot: {accel}{" " + extra if extra else ""}')
    for path in (serial, ktap):
        path.unlink(missing_ok=True)
    cmd = qemu_command(accel, kernel, initrd, serial, ktap, extra)
    watch = silence_watch(serial, silence) if silence is not None else None
    start = time.monotonic()
    try:
        proc = run(cmd, timeout=timeout, watch=watch, check=False)
    except Timeout:
        return [f'no power-off within {timeout:.0f} s (hang?)']
    finally:
        progress(f'boot: {accel}: {time.monotonic() - start:.1f} s')
    if proc.returncode != 0:
        return [f'qemu exited with {proc.returncode}: {tail(proc.stdout, 1)}']
    return []


def boot(accel: str, kernel: Path, initrd: Path, out: Path,
         timeout: float) -> tuple[str, list[str]]:
    """Boot with the chosen accelerator, or KVM if it works, else TCG;
    (the accelerator used, the problems seen)."""
    serial, ktap = out / 'serial.log', out / 'guest.ktap'
    if accel != 'auto':
        return accel, boot_once(accel, kernel, initrd, serial, ktap, timeout)
    why = probe_kvm(out)
    if why is None:
        try:
            return 'kvm', boot_once('kvm', kernel, initrd, serial, ktap,
                                    timeout, silence=KVM_SILENCE_TIMEOUT)
        except Stopped as e:
            why = f'it ran the probe, but the kernel printed nothing ({e})'
    progress(f'boot: KVM does not work ({why}); falling back to TCG')
    return 'tcg', boot_once('tcg', kernel, initrd, serial, ktap, timeout)
