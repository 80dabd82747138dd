# SPDX-License-Identifier: GPL-2.0-only
"""The boot test's kernel configuration.

x86_64 defconfig, config.fragment merged on top with the tree's own
scripts/kconfig/merge_config.sh, then olddefconfig; afterwards every option
the fragment asks for must have survived (as kunit_tool's validate_config
checks), and the ones that did not are named.  Which KUnit suites the
fragment's test options build is read from the tree, so that a suite that
did not run is noticed whatever its name.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from boot_kernel import Build
from boot_results import Case, Status
from nsgen.run import run

HERE = Path(__file__).resolve().parent
FRAGMENT = HERE / 'config.fragment'
MERGE_CONFIG = 'scripts/kconfig/merge_config.sh'
STAMP = '.boot-test-config'

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


def stamp(b: Build, fragment: Path = FRAGMENT) -> str:
    """What the .config depends on; the same stamp means no need to redo
    it (a different compiler wrapper does not change the configuration)."""
    h = hashlib.sha256()
    for part in (str(b.ksrc), fragment.read_text(),
                 (b.ksrc / 'arch/x86/configs/x86_64_defconfig').read_text()):
        h.update(part.encode() + b'\0')
    return h.hexdigest()


def configure(b: Build, log: Path, fragment: Path = FRAGMENT) -> Case:
    """Write build_dir/.config unless it is up to date; the case saying
    whether every option of the fragment made it."""
    b.build_dir.mkdir(parents=True, exist_ok=True)
    config = b.build_dir / '.config'
    stamp_file = b.build_dir / STAMP
    want = stamp(b, fragment)
    if (config.is_file() and stamp_file.is_file()
            and stamp_file.read_text().strip() == want):
        b.say('config: up to date, not redone')
    else:
        stamp_file.unlink(missing_ok=True)
        b.make('defconfig', log=log)
        # merge_config.sh writes its temporary files into the current
        # directory: the build directory, never the source tree.
        run(['sh', b.ksrc / MERGE_CONFIG, '-m', '-O', b.build_dir, config,
             fragment], cwd=b.build_dir, log=log)
        b.make('olddefconfig', log=log)
        stamp_file.write_text(want + '\n')
    missing = missing_options(fragment.read_text(), config.read_text())
    for line in missing:
        b.say(f'config: {line}')
    return Case('config_fragment_applied',
                Status.FAIL if missing else Status.PASS, missing)


KUNIT_OPTION = re.compile(r'^CONFIG_\w*KUNIT\w*TEST$')
SUITE_NAME = re.compile(r'struct\s+kunit_suite\s+\w+\s*=\s*\{[^}]*?'
                        r'\.name\s*=\s*"([^"]+)"', re.S)


def objects_of(ksrc: Path, option: str) -> list[Path]:
    """The sources that obj-$(option) builds, from the tree's Makefiles."""
    sym = re.escape(option)
    rule = re.compile(rf'^obj-\$\({sym}\)\s*[+:]?=\s*(.*)$', re.M)
    found = []
    for makefile in _makefiles_naming(ksrc, option):
        for m in rule.finditer(makefile.read_text(errors='replace')):
            for obj in m.group(1).split():
                source = makefile.parent / (obj[:-2] + '.c')
                if obj.endswith('.o') and source.is_file():
                    found.append(source)
    return sorted(found)


def _makefiles_naming(ksrc: Path, option: str) -> list[Path]:
    """Makefiles and Kbuild files of the tree that name option."""
    proc = run(['grep', '-rlF', '--include=Makefile', '--include=Kbuild',
                f'$({option})', '.'], cwd=ksrc, check=False)
    return sorted(ksrc / p for p in proc.stdout.split())


def kunit_suites(ksrc: Path, fragment: Path = FRAGMENT) -> list[str]:
    """The KUnit suites built in by the fragment's *KUNIT*TEST options,
    as the tree's sources name them."""
    names = []
    for option, value in parse_config(fragment.read_text()).items():
        if value != 'y' or not KUNIT_OPTION.match(option):
            continue
        for source in objects_of(ksrc, option):
            names += SUITE_NAME.findall(source.read_text(errors='replace'))
    return sorted(set(names))
