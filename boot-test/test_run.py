# SPDX-License-Identifier: GPL-2.0-only
"""Tests of run.py's pure parts: KTAP, kernel config, command lines."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import pytest

import run

FRAGMENT = """\
# comment
CONFIG_KVM=m
CONFIG_KUNIT=y
# CONFIG_MODULE_SIG is not set
CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y
"""


def test_parse_config_reads_values_and_unset() -> None:
    assert run.parse_config(FRAGMENT) == {
        'CONFIG_KVM': 'm',
        'CONFIG_KUNIT': 'y',
        'CONFIG_MODULE_SIG': 'n',
        'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST': 'y',
    }


def test_merge_config_replaces_and_appends() -> None:
    config = ('CONFIG_A=y\n# CONFIG_KVM is not set\nCONFIG_MODULE_SIG=y\n'
              '# comment kept\n')
    merged = run.merge_config(config, FRAGMENT)
    assert merged.splitlines() == [
        'CONFIG_A=y', '# comment kept', 'CONFIG_KVM=m', 'CONFIG_KUNIT=y',
        '# CONFIG_MODULE_SIG is not set',
        'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y']
    assert run.merge_config(merged, FRAGMENT) == merged


def test_missing_options_names_each_dropped_option() -> None:
    # As on a pristine tree: olddefconfig dropped the unknown KUnit option.
    config = ('CONFIG_KVM=m\nCONFIG_KUNIT=y\n'
              '# CONFIG_MODULE_SIG is not set\n')
    assert run.missing_options(FRAGMENT, config) == [
        'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y requested, not set in .config']


def test_missing_options_value_changed() -> None:
    config = ('CONFIG_KVM=y\nCONFIG_KUNIT=y\nCONFIG_MODULE_SIG=y\n'
              'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y\n')
    assert run.missing_options(FRAGMENT, config) == [
        'CONFIG_KVM=m requested, y in .config',
        'CONFIG_MODULE_SIG=n requested, y in .config']


def test_missing_options_none_when_all_survived() -> None:
    assert run.missing_options(FRAGMENT, FRAGMENT) == []


def test_fragment_is_valid() -> None:
    options = run.parse_config(run.FRAGMENT.read_text())
    assert options['CONFIG_KVM'] == 'm'
    assert options['CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST'] == 'y'
    assert options['CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_IMPORTS'] == 'n'


GUEST_KTAP = """\
KTAP version 1\r
1..3\r
ok 1 kvm_loads_with_irqbypass\r
not ok 2 fpu_swap_intruder_refused\r
# fpu_swap_intruder loaded, but the loader should have refused it\r
# [    3.1] fpu_swap_intruder: took fpu_swap_kvm_fpstate+0x0/0x10\r
ok 3 skipped_one # SKIP not here\r
"""


def test_parse_ktap_results_and_diagnostics() -> None:
    plan, cases = run.parse_ktap(GUEST_KTAP)
    assert plan == 3
    assert [(c.name, c.ok) for c in cases] == [
        ('kvm_loads_with_irqbypass', True),
        ('fpu_swap_intruder_refused', False),
        ('skipped_one', True)]
    assert cases[1].diagnostics == [
        'fpu_swap_intruder loaded, but the loader should have refused it',
        '[    3.1] fpu_swap_intruder: took fpu_swap_kvm_fpstate+0x0/0x10']


def test_parse_ktap_truncated_output() -> None:
    plan, cases = run.parse_ktap('KTAP version 1\n1..9\nok 1 a\n')
    assert plan == 9
    assert len(cases) == 1


def test_parse_ktap_empty() -> None:
    assert run.parse_ktap('') == (None, [])


SERIAL = """\
[    0.000000] Linux version 6.12.118
[    0.912345] KTAP version 1
[    0.912346] 1..2
[    0.912347]     KTAP version 1
[    0.912348]     # Subtest: module_export_for
[    0.912349]     # module: module_export_for_kunit
[    0.912350]     1..2
[    0.912351]     ok 1 exact_match
[    0.912352]     not ok 2 prefix_pattern
[    0.912353] # module_export_for: pass:1 fail:1 skip:0 total:2
[    0.912354] not ok 1 module_export_for
[    0.912355]     KTAP version 1
[    0.912356]     # Subtest: other
[    0.912357]     1..1
[    0.912358]     ok 1 t
[    0.912359] ok 2 other
[    1.500000] Run /init as init process
KTAP version 1
1..1
ok 1 from_the_guest_not_kunit
[    2.000000] reboot: Power down
"""


def test_kunit_ktap_takes_only_kernel_lines() -> None:
    text = run.kunit_ktap(SERIAL)
    assert text.startswith('KTAP version 1\n1..2\n')
    assert text.endswith('ok 2 other\n')
    assert 'from_the_guest' not in text


def test_kunit_cases_one_per_suite_with_nested_ktap() -> None:
    cases = run.kunit_cases(SERIAL)
    assert [(c.name, c.ok) for c in cases] == [
        ('kunit_module_export_for', False), ('kunit_other', True)]
    assert '    not ok 2 prefix_pattern' in cases[0].subtest
    assert cases[0].diagnostics == []


def test_kunit_cases_required_suite_missing() -> None:
    cases = run.kunit_cases('[    0.1] Linux version\n')
    assert [(c.name, c.ok) for c in cases] == [
        ('kunit_module_export_for', False)]
    assert 'did not run' in cases[0].diagnostics[0]


def test_format_ktap_round_trips() -> None:
    cases = [run.TestCase('a', True),
             run.TestCase('b', False, ['why'], ['    1..1', '    ok 1 x'])]
    text = run.format_ktap(cases)
    assert text == ('KTAP version 1\n1..2\nok 1 a\n    1..1\n    ok 1 x\n'
                    'not ok 2 b\n# why\n')
    plan, parsed = run.parse_ktap(text)
    assert plan == 2
    assert [(c.name, c.ok, c.diagnostics) for c in parsed] == [
        ('a', True, []), ('b', False, ['why'])]
    assert run.summary(cases) == '1 passed, 1 failed'


def test_qemu_command_tcg() -> None:
    cmd = run.qemu_command('tcg', Path('/b/bzImage'), Path('/o/i.gz'),
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
    cmd = run.qemu_command('kvm', Path('k'), Path('i'), Path('s'), Path('t'))
    assert cmd[cmd.index('-cpu') + 1] == 'host'


def test_probe_boot_sector_is_a_boot_sector() -> None:
    assert len(run.PROBE_BOOT_SECTOR) == 512
    assert run.PROBE_BOOT_SECTOR.endswith(b'\x55\xaa')


def test_parser_defaults_and_required_ksrc(tmp_path: Path) -> None:
    args = run.setup_parser().parse_args(['--ksrc', str(tmp_path)])
    assert args.ksrc == tmp_path
    assert args.accel == 'auto'
    assert args.out.parts[-2:] == ('out', 'boot-test')
    with pytest.raises(SystemExit):
        run.setup_parser().parse_args([])


def test_every_module_has_a_source_and_a_guest_case() -> None:
    init = run.INIT.read_text()
    for spec in run.MODULES:
        assert (run.MODULES_SRC / f'{spec.name}.c').is_file()
        assert spec.name in init


def test_missing_tool_is_one_line_error() -> None:
    with pytest.raises(run.BootTestError, match='not found'):
        run.run(['no-such-tool-boot-test'])


def test_initramfs_list_adds_built_modules_only(tmp_path: Path) -> None:
    r = run.Run(ksrc=tmp_path, build_dir=tmp_path, out=tmp_path, jobs=1,
                timeout=1, accel='tcg')
    ko = run.module_dir(r, 'clevo_wmi') / 'clevo_wmi.ko'
    ko.parent.mkdir(parents=True)
    ko.write_bytes(b'')
    text = run.initramfs_list(r)
    assert text.startswith(run.INITRAMFS_LIST.read_text())
    assert text.endswith(f'file /modules/clevo_wmi.ko {ko} 0644 0 0\n')
    assert '/modules/tuxedo_io.ko' not in text


def test_run_streams_to_log_and_returns_output(tmp_path: Path) -> None:
    log = tmp_path / 'log'
    log.write_text('earlier\n')
    proc = run.run(['sh', '-c', 'echo out; echo err >&2'], log=log)
    assert proc.stdout == 'out\nerr\n'
    assert log.read_text() == ("earlier\n$ sh -c 'echo out; echo err >&2'\n"
                               'out\nerr\n')
    with pytest.raises(run.BootTestError, match=r'^false: exit status 1'):
        run.run(['false'], log=log)


def test_run_guest_kills_a_silent_guest(tmp_path: Path) -> None:
    serial = tmp_path / 'serial.log'
    start = time.monotonic()
    with pytest.raises(run.Silent, match='no console output within 0 s'):
        run.run_guest(['sleep', '30'], serial, timeout=30, silence=0.3)
    assert time.monotonic() - start < 5


def test_run_guest_lets_a_talking_guest_finish(tmp_path: Path) -> None:
    serial = tmp_path / 'serial.log'
    proc = run.run_guest(['sh', '-c', f'echo Linux > {serial}; sleep 1; '
                          'echo done; exit 3'], serial, timeout=30,
                         silence=0.5)
    assert proc.returncode == 3
    assert proc.stdout == 'done\n'


def test_run_guest_times_out(tmp_path: Path) -> None:
    serial = tmp_path / 'serial.log'
    with pytest.raises(run.Timeout, match='no power-off within 0 s'):
        run.run_guest(['sh', '-c', f'echo Linux > {serial}; sleep 30'],
                      serial, timeout=0.3)


def fake_boot(monkeypatch: pytest.MonkeyPatch, probe: Optional[str],
              kvm_silent: bool) -> list[str]:
    """Run boot() with the probe's answer given; the accelerators tried."""
    tried = []

    def boot_once(r: run.Run, accel: str, serial: Path, ktap: Path,
                  silence: Optional[float] = None) -> list[str]:
        tried.append(accel)
        if accel == 'kvm' and kvm_silent:
            assert silence == run.KVM_SILENCE_TIMEOUT
            raise run.Silent('no console output within 5 s')
        return []

    monkeypatch.setattr(run, 'probe_kvm', lambda scratch: probe)
    monkeypatch.setattr(run, 'boot_once', boot_once)
    r = run.Run(ksrc=Path('k'), build_dir=Path('b'), out=Path('o'), jobs=1,
                timeout=1, accel='auto')
    assert run.boot(r, Path('s'), Path('t')) == []
    return tried


def test_boot_falls_back_to_tcg_when_kvm_boots_nothing(
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert fake_boot(monkeypatch, None, kvm_silent=True) == ['kvm', 'tcg']
    assert 'falling back to TCG' in capsys.readouterr().err


def test_boot_uses_kvm_when_it_works(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fake_boot(monkeypatch, None, kvm_silent=False) == ['kvm']


def test_boot_skips_kvm_when_the_probe_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert fake_boot(monkeypatch, '/dev/kvm is missing',
                     kvm_silent=False) == ['tcg']


def test_nsdeps_source_imports_nothing_and_imports_of() -> None:
    assert run.imports_of(run.NSDEPS_SOURCE.read_text()) == []
    text = ('#include <linux/module.h>\n'
            'MODULE_IMPORT_NS("DMA_BUF");\n'
            '\tMODULE_IMPORT_NS("module:kvm");\n'
            '/* MODULE_IMPORT_NS(X) in a comment */\n')
    assert run.imports_of(text) == ['MODULE_IMPORT_NS("DMA_BUF");',
                                    'MODULE_IMPORT_NS("module:kvm");']
