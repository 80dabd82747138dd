# SPDX-License-Identifier: GPL-2.0-only
"""boot_qemu: the command line, the KVM probe, the silent-guest watch and
the fallback to TCG (QEMU itself replaced by small shell commands)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import pytest

import boot_qemu
from nsgen.run import Stopped


def test_qemu_command_tcg() -> None:
    cmd = boot_qemu.qemu_command('tcg', Path('/b/bzImage'), Path('/o/i.gz'),
                                 Path('/o/serial.log'), Path('/o/guest.ktap'))
    assert cmd[:3] == ['qemu-system-x86_64', '-accel', 'tcg']
    assert '-cpu' not in cmd
    assert '-no-reboot' in cmd
    assert cmd[cmd.index('-kernel') + 1] == '/b/bzImage'
    serials = [cmd[i + 1] for i, a in enumerate(cmd) if a == '-serial']
    assert serials == ['file:/o/serial.log', 'file:/o/guest.ktap']
    append = cmd[cmd.index('-append') + 1].split()
    assert 'panic=-1' in append
    assert 'console=ttyS0' in append


def test_qemu_command_kvm_uses_host_cpu() -> None:
    cmd = boot_qemu.qemu_command('kvm', Path('k'), Path('i'), Path('s'),
                                 Path('t'))
    assert cmd[cmd.index('-cpu') + 1] == 'host'


def test_probe_boot_sector_is_a_boot_sector() -> None:
    assert len(boot_qemu.PROBE_BOOT_SECTOR) == 512
    assert boot_qemu.PROBE_BOOT_SECTOR.endswith(b'\x55\xaa')


def fake_qemu(monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """QEMU replaced by sh -c script ($1 is the serial log)."""
    monkeypatch.setattr(
        boot_qemu, 'qemu_command',
        lambda accel, kernel, initrd, serial, ktap, extra='':
        ['sh', '-c', script, 'qemu', str(serial)])


def test_a_silent_guest_is_stopped(monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    fake_qemu(monkeypatch, 'sleep 30')
    start = time.monotonic()
    with pytest.raises(Stopped, match='no console output within 0 s'):
        boot_qemu.boot_once('kvm', Path('k'), Path('i'),
                            tmp_path / 'serial.log', tmp_path / 'g.ktap',
                            timeout=30, silence=0.3)
    assert time.monotonic() - start < 5


def test_a_talking_guest_runs_to_its_end(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    fake_qemu(monkeypatch, 'echo Linux > "$1"; sleep 1')
    assert boot_qemu.boot_once('kvm', Path('k'), Path('i'),
                               tmp_path / 'serial.log', tmp_path / 'g.ktap',
                               timeout=30, silence=0.5) == []


def test_a_hanging_guest_times_out(monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    fake_qemu(monkeypatch, 'echo Linux > "$1"; sleep 30')
    start = time.monotonic()
    assert boot_qemu.boot_once('tcg', Path('k'), Path('i'),
                               tmp_path / 'serial.log', tmp_path / 'g.ktap',
                               timeout=0.5) == ['no power-off within 0 s '
                                                '(hang?)']
    assert time.monotonic() - start < 5


def test_qemu_failing_is_a_problem(monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    fake_qemu(monkeypatch, 'echo "qemu: no such kernel"; exit 1')
    assert boot_qemu.boot_once('tcg', Path('k'), Path('i'),
                               tmp_path / 'serial.log', tmp_path / 'g.ktap',
                               timeout=30) == [
        'qemu exited with 1: qemu: no such kernel']


def fake_boot(monkeypatch: pytest.MonkeyPatch, probe: Optional[str],
              kvm_silent: bool) -> list[str]:
    """boot() with the probe's answer given; the accelerators tried."""
    tried = []

    def boot_once(accel: str, kernel: Path, initrd: Path, serial: Path,
                  ktap: Path, timeout: float,
                  silence: Optional[float] = None) -> list[str]:
        tried.append(accel)
        if accel == 'kvm' and kvm_silent:
            assert silence == boot_qemu.KVM_SILENCE_TIMEOUT
            raise Stopped('no console output within 5 s')
        return []

    monkeypatch.setattr(boot_qemu, 'probe_kvm', lambda scratch: probe)
    monkeypatch.setattr(boot_qemu, 'boot_once', boot_once)
    accel, problems = boot_qemu.boot('auto', Path('k'), Path('i'), Path('o'),
                                     1)
    assert problems == []
    assert accel == tried[-1]
    return tried


def test_boot_falls_back_to_tcg_when_kvm_boots_nothing(
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert fake_boot(monkeypatch, None, kvm_silent=True) == ['kvm', 'tcg']
    assert 'falling back to TCG' in capsys.readouterr().err


def test_boot_uses_kvm_when_it_works(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fake_boot(monkeypatch, None, kvm_silent=False) == ['kvm']


def test_boot_skips_kvm_when_the_probe_fails(
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert fake_boot(monkeypatch, '/dev/kvm is missing',
                     kvm_silent=False) == ['tcg']
    assert '/dev/kvm is missing' in capsys.readouterr().err
