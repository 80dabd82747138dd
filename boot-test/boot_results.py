# SPDX-License-Identifier: GPL-2.0-only
"""The boot test's results: one KTAP document, read with the kernel's own
parser (tools/testing/kunit/kunit_parser.py of the tree under test).

results.ktap has four suites: "build" (host-side checks of the builds),
"boot" (the guest powered off, the KUnit suites the config builds ran),
"guest" (the KTAP the guest's /init printed, as it printed it) and "kunit"
(KUnit's own KTAP from the serial log, as the kernel printed it).  A
guest that stopped early leaves cases without a verdict: each gets a "not
ok" saying so, with the end of the serial log.  The counts and the
summary line are kunit_parser's reading of the finished file, so that
'kunit.py parse results.ktap' says the same as we do.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import io
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Optional, Sequence

KUNIT_TOOL = 'tools/testing/kunit'
INDENT = '    '
TOP_RESULT = re.compile(r'^(ok|not ok) \d+')
TOP_PLAN = re.compile(r'^1\.\.(\d+)')
NAME_UNSAFE = re.compile(r'[#\s]+')
KTAP_LINE = re.compile(r'^\s*(?:K?TAP version \d+$|1\.\.\d+|# |#$|ok '
                       r'|not ok )')


class Status(enum.Enum):
    PASS = 'ok'
    FAIL = 'not ok'
    SKIP = 'skip'


@dataclasses.dataclass
class Case:
    """A host-side test case: its verdict, diagnostics, SKIP reason."""
    name: str
    status: Status
    diagnostics: list[str] = dataclasses.field(default_factory=list)
    reason: str = ''

    def to_dict(self) -> dict[str, Any]:
        return {'name': self.name, 'status': self.status.name,
                'diagnostics': self.diagnostics, 'reason': self.reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> 'Case':
        return cls(d['name'], Status[d['status']], list(d['diagnostics']),
                   d.get('reason', ''))


def save_cases(path: Path, cases: Sequence[Case]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([c.to_dict() for c in cases], indent=1) + '\n')


def load_cases(path: Path) -> list[Case]:
    if not path.is_file():
        return []
    return [Case.from_dict(d) for d in json.loads(path.read_text())]


# --- the kernel's parser --------------------------------------------------

def load_parser(ksrc: Path) -> ModuleType:
    """kunit_parser of the tree (it imports its neighbours, so its folder
    goes on sys.path)."""
    tool = ksrc / KUNIT_TOOL
    if not (tool / 'kunit_parser.py').is_file():
        raise FileNotFoundError(f'{tool}/kunit_parser.py: missing; is '
                                f'{ksrc} a kernel tree?')
    if str(tool) not in sys.path:
        sys.path.insert(0, str(tool))
    return importlib.import_module('kunit_parser')


@dataclasses.dataclass
class Parsed:
    """kunit_parser's reading of one document."""
    status: str            # kunit_parser.TestStatus name
    passed: int
    failed: int
    crashed: int
    skipped: int
    errors: int
    messages: str          # what the parser printed (errors included)
    results: int           # top-level verdicts it found

    @property
    def ok(self) -> bool:
        return self.status in ('SUCCESS', 'SKIPPED')


def parse(parser: ModuleType, lines: Iterable[str]) -> Parsed:
    """Run kunit_parser.parse_run_tests over lines, its printing captured
    (newer versions take the printer as an argument, older ones use the
    module's)."""
    buffer = io.StringIO()
    printer_module = sys.modules.get('kunit_printer')
    printer = printer_module.Printer(buffer) if printer_module else None
    saved = getattr(parser, 'stdout', None)
    try:
        if saved is not None and printer is not None:
            parser.stdout = printer
        params = inspect.signature(parser.parse_run_tests).parameters
        if 'printer' in params:
            test = parser.parse_run_tests(list(lines), printer)
        else:
            test = parser.parse_run_tests(list(lines))
    except ValueError as e:
        # kunit_parser stops on some malformed input (LineStream past EOF)
        return Parsed('FAILURE_TO_PARSE_TESTS', 0, 0, 0, 0, 1,
                      f'{buffer.getvalue()}kunit_parser: {e}\n', 0)
    finally:
        if saved is not None:
            parser.stdout = saved
    c = test.counts
    return Parsed(test.status.name, c.passed, c.failed, c.crashed,
                  c.skipped, c.errors, buffer.getvalue(),
                  sum(1 for t in test.subtests if t.name))


def kunit_document(parser: ModuleType, serial: str) -> list[str]:
    """KUnit's KTAP from the serial log, printk prefixes removed by
    kunit_parser, cut after the last top-level verdict (the guest's own
    kernel messages follow it)."""
    # Other kernel messages can land in the middle of KUnit's (a driver
    # probing while the suites run): only KTAP-shaped lines are kept.
    lines = [line for line in parser.extract_tap_lines(serial.splitlines())
             if KTAP_LINE.match(line)]
    plan: Optional[int] = None
    seen = 0
    for n, line in enumerate(lines):
        m = TOP_PLAN.match(line)
        if plan is None and m:
            plan = int(m.group(1))
        elif TOP_RESULT.match(line):
            seen += 1
            if plan is not None and seen == plan:
                return lines[:n + 1]
    return lines


# --- writing KTAP ---------------------------------------------------------

def safe_name(name: str) -> str:
    """A test name KTAP can carry (no '#', no whitespace)."""
    return NAME_UNSAFE.sub('_', name.strip()) or 'unnamed'


def result_line(number: int, name: str, status: Status,
                reason: str = '') -> str:
    if status is Status.SKIP:
        return f'ok {number} {name} # SKIP {reason}'.rstrip()
    return f'{status.value} {number} {name}'


def diagnostic_lines(lines: Iterable[str]) -> list[str]:
    return [f'# {line}'.rstrip() for line in lines]


def suite_of_cases(cases: Sequence[Case]) -> list[str]:
    """A KTAP document of host-side cases (diagnostics before each
    verdict, where kunit_parser files them with the case)."""
    lines = ['KTAP version 1', f'1..{len(cases)}']
    for number, case in enumerate(cases, 1):
        lines += diagnostic_lines(case.diagnostics)
        lines.append(result_line(number, safe_name(case.name), case.status,
                                 case.reason))
    return lines


def as_subtest(name: str, document: Sequence[str]) -> list[str]:
    """A whole KTAP document (version line first) as subtest name."""
    body = list(document)
    if body and body[0].startswith('KTAP version'):
        body = body[1:]
    if not (body and body[0].startswith('# Subtest:')):
        body.insert(0, f'# Subtest: {name}')
    return ['KTAP version 1', *body]


def complete_guest(parser: ModuleType, document: list[str],
                   expected: Sequence[str], why: str,
                   log_tail: Sequence[str]) -> list[str]:
    """The guest's KTAP with a "not ok" for every expected case it gave no
    verdict for (a guest that died mid-run), so that a missing verdict
    counts as a failure and the document stays well-formed."""
    plans = [n for n, line in enumerate(document) if TOP_PLAN.match(line)]
    if not plans:
        document = ['KTAP version 1', f'1..{len(expected)}']
    elif document[plans[0]] != f'1..{len(expected)}':
        # A guest running other cases than the host's list (a stale image):
        # the host's count stands, so a missing verdict still fails.
        document = list(document)
        document[plans[0]:plans[0] + 1] = [
            f'1..{len(expected)}',
            f'# the guest planned {document[plans[0]][3:]} cases, the host '
            f'expects {len(expected)}']
    done = parse(parser, document).results
    for number in range(done + 1, len(expected) + 1):
        document += diagnostic_lines([f'no verdict: {why}', *log_tail])
        document.append(result_line(number, expected[number - 1],
                                    Status.FAIL))
        log_tail = []
    return document


@dataclasses.dataclass
class Results:
    text: str              # results.ktap
    parsed: Parsed         # kunit_parser's reading of it

    def summary(self) -> str:
        p = self.parsed
        failed = p.failed + p.crashed + p.errors
        line = f'{p.passed} passed, {failed} failed'
        return line + (f', {p.skipped} skipped' if p.skipped else '')

    @property
    def ok(self) -> bool:
        p = self.parsed
        return p.ok and not (p.failed or p.crashed or p.errors)


def assemble(parser: ModuleType,
             suites: Sequence[tuple[str, Sequence[str]]]) -> Results:
    """One KTAP document of the named suites (each a KTAP document),
    each suite's verdict being kunit_parser's reading of it."""
    lines = ['KTAP version 1', f'1..{len(suites)}']
    for number, (name, document) in enumerate(suites, 1):
        parsed = parse(parser, document)
        lines += [INDENT + line if line else line
                  for line in as_subtest(name, document)]
        status = Status.PASS if parsed.ok else Status.FAIL
        if parsed.status == 'SKIPPED':
            status = Status.SKIP
        lines.append(result_line(number, name, status,
                                 'every case skipped'))
    text = '\n'.join(lines) + '\n'
    return Results(text, parse(parser, text.splitlines()))
