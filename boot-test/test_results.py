# SPDX-License-Identifier: GPL-2.0-only
"""boot_results and the results step, on the canned logs of test_data/,
read with the kernel's own kunit_parser (and kunit.py parse)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

import boot_results
import run
from boot_results import Case, Status
from nsgen.run import run as run_program

DATA = Path(__file__).resolve().parent / 'test_data'
CASES = ['kvm_loads_with_irqbypass', 'fpu_swap_intruder_refused',
         'signed_only_case']


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def test_kunit_document_strips_printk_and_stops_at_the_end(
        kunit_parser: ModuleType) -> None:
    doc = boot_results.kunit_document(kunit_parser,
                                      (DATA / 'serial_pass.log').read_text())
    assert doc[:2] == ['KTAP version 1', '1..1']
    assert doc[-1] == 'ok 1 module_export_for'
    assert not any('boot-test' in line for line in doc)


def test_kunit_document_empty_without_kunit(kunit_parser: ModuleType) -> None:
    assert boot_results.kunit_document(
        kunit_parser, (DATA / 'serial_panic.log').read_text()) == []


def test_host_cases_parse_with_skip_reason_and_diagnostics(
        kunit_parser: ModuleType) -> None:
    doc = boot_results.suite_of_cases([
        Case('a', Status.PASS), Case('b fails', Status.FAIL, ['why', '']),
        Case('c', Status.SKIP, reason='not on this kernel')])
    assert doc[2:] == ['ok 1 a', '# why', '#', 'not ok 2 b_fails',
                       'ok 3 c # SKIP not on this kernel']
    parsed = boot_results.parse(kunit_parser, doc)
    assert (parsed.passed, parsed.failed, parsed.skipped,
            parsed.errors) == (1, 1, 1, 0)


def test_assemble_counts_every_leaf_and_keeps_skips(
        kunit_parser: ModuleType) -> None:
    kunit = boot_results.kunit_document(
        kunit_parser, (DATA / 'serial_pass.log').read_text())
    results = boot_results.assemble(kunit_parser, [
        ('build', boot_results.suite_of_cases([
            Case('config_fragment_applied', Status.PASS)])),
        ('guest', lines('guest_pass.ktap')),
        ('kunit', kunit)])
    p = results.parsed
    assert (p.passed, p.failed, p.crashed, p.skipped, p.errors) == \
        (1 + 2 + 5, 0, 0, 1, 0)
    assert results.ok
    assert results.summary() == '8 passed, 0 failed, 1 skipped'
    assert 'ok 3 signed_only_case # SKIP CONFIG_MODULE_SIG is not set' \
        in results.text
    assert results.text.startswith('KTAP version 1\n1..3\n')
    assert '    # Subtest: guest\n' in results.text


def test_a_guest_that_died_fails_every_case_it_did_not_reach(
        kunit_parser: ModuleType) -> None:
    guest = boot_results.complete_guest(
        kunit_parser, lines('guest_died.ktap'), CASES,
        'the guest stopped before this case', ['serial.log: panic'])
    assert guest[-1] == 'not ok 3 signed_only_case'
    assert '# no verdict: the guest stopped before this case' in guest
    assert '# serial.log: panic' in guest
    results = boot_results.assemble(kunit_parser, [('guest', guest)])
    p = results.parsed
    assert (p.passed, p.failed, p.errors) == (1, 2, 0)
    assert not results.ok
    assert results.summary() == '1 passed, 2 failed'


def test_the_host_count_stands_against_the_guest_plan(
        kunit_parser: ModuleType) -> None:
    guest = boot_results.complete_guest(
        kunit_parser,
        ['KTAP version 1', '1..1', 'ok 1 kvm_loads_with_irqbypass'],
        CASES, 'stopped', [])
    assert guest[1:3] == ['1..3', '# the guest planned 1 cases, the host '
                          'expects 3']
    p = boot_results.assemble(kunit_parser, [('guest', guest)]).parsed
    assert (p.passed, p.failed, p.errors) == (1, 2, 0)


def test_a_guest_without_ktap_fails_every_case(
        kunit_parser: ModuleType) -> None:
    guest = boot_results.complete_guest(kunit_parser, [], CASES, 'no boot',
                                        [])
    assert guest[:2] == ['KTAP version 1', '1..3']
    p = boot_results.assemble(kunit_parser, [('guest', guest)]).parsed
    assert (p.passed, p.failed, p.errors) == (0, 3, 0)


def write_run(out: Path, guest: str, serial: str, problems: list[str]) -> None:
    """Both boots' outputs (the second, module.sig_enforce=1, the same)."""
    for suffix in ('', '-enforce'):
        (out / f'guest{suffix}.ktap').write_text((DATA / guest).read_text())
        (out / f'serial{suffix}.log').write_text((DATA / serial).read_text())
    (out / 'boot.json').write_text(json.dumps({'accel': 'tcg',
                                               'problems': problems,
                                               'enforce_problems': problems}))
    boot_results.save_cases(out / 'cases' / 'config.json',
                            [Case('config_fragment_applied', Status.PASS)])


def context(ksrc: Path, out: Path) -> run.Context:
    return run.Context(run.boot_kernel.Build(ksrc, out / 'build'), out, 1,
                       'tcg')


def test_results_step_then_kunit_py_parse_agree(
        ksrc_tools: Path, tmp_path: Path,
        capsys: 'object', monkeypatch: 'object') -> None:
    monkeypatch.setattr(run.boot_initramfs, 'guest_cases',  # type: ignore
                        lambda path=None: CASES)
    monkeypatch.setattr(run.boot_config, 'kunit_suites',  # type: ignore
                        lambda ksrc: ['module_export_for'])
    write_run(tmp_path, 'guest_pass.ktap', 'serial_pass.log', [])
    assert run.step_results(context(ksrc_tools, tmp_path)) == 0
    summary = capsys.readouterr().out.splitlines()[-1]  # type: ignore
    # config, powered off twice, suite ran + 2 guest passes per boot + 5
    # KUnit leaves
    assert summary == '13 passed, 0 failed, 2 skipped'
    tool = ksrc_tools / boot_results.KUNIT_TOOL / 'kunit.py'
    out = run_program([sys.executable, tool, 'parse',
                       tmp_path / 'results.ktap'], check=False).stdout
    assert 'Ran 15 tests: passed: 13, skipped: 2' in out
    assert 'errors' not in out and '[ERROR]' not in out


def test_results_step_after_a_panic(ksrc_tools: Path, tmp_path: Path,
                                    monkeypatch: 'object') -> None:
    monkeypatch.setattr(run.boot_initramfs, 'guest_cases',  # type: ignore
                        lambda path=None: CASES)
    monkeypatch.setattr(run.boot_config, 'kunit_suites',  # type: ignore
                        lambda ksrc: ['module_export_for'])
    write_run(tmp_path, 'guest_died.ktap', 'serial_panic.log',
              ['qemu exited with 1'])
    assert run.step_results(context(ksrc_tools, tmp_path)) == 1
    text = (tmp_path / 'results.ktap').read_text()
    assert '# Kernel panic - not syncing: Fatal exception' in text
    assert 'not ok 1 guest_boots_and_powers_off' in text
    assert 'not ok 2 kunit_suite_module_export_for_ran' in text
    assert 'not ok 3 signed_only_case' in text
    p = boot_results.parse(boot_results.load_parser(ksrc_tools),
                           text.splitlines())
    assert p.errors == 0


def test_step_failure_is_a_failed_case(ksrc_tools: Path, tmp_path: Path,
                                       monkeypatch: 'object') -> None:
    monkeypatch.setattr(run.boot_initramfs, 'guest_cases',  # type: ignore
                        lambda path=None: CASES)
    monkeypatch.setattr(run.boot_config, 'kunit_suites',  # type: ignore
                        lambda ksrc: [])
    c = context(ksrc_tools, tmp_path)
    assert run.step_results(c, 'build: make failed') == 1
    text = (tmp_path / 'results.ktap').read_text()
    assert '# build: make failed' in text
    assert 'not ok 1 boot_test_steps' in text
    assert 'the guest was not booted' in text


def test_saved_cases_round_trip(tmp_path: Path) -> None:
    cases = [Case('a', Status.SKIP, ['d'], 'r'), Case('b', Status.FAIL)]
    boot_results.save_cases(tmp_path / 'c.json', cases)
    assert boot_results.load_cases(tmp_path / 'c.json') == cases
    assert boot_results.load_cases(tmp_path / 'none.json') == []


def test_kernel_messages_inside_kunit_output_are_left_out(
        kunit_parser: ModuleType) -> None:
    """A real log: cfg80211's messages landed between KUnit's lines."""
    doc = boot_results.kunit_document(
        kunit_parser, (DATA / 'serial_interleaved.log').read_text())
    assert not any('regulatory' in line for line in doc)
    p = boot_results.assemble(kunit_parser, [('kunit', doc)]).parsed
    assert (p.passed, p.failed, p.errors) == (46, 0, 0)


def test_input_the_parser_chokes_on_is_an_error(
        kunit_parser: ModuleType) -> None:
    p = boot_results.parse(kunit_parser, [
        'KTAP version 1', '1..1', '    KTAP version 1', 'junk',
        '    # Subtest: s', '    1..1', '    ok 1 t', 'ok 1 s'])
    assert p.errors >= 1 and not p.ok
