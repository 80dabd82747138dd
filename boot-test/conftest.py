# SPDX-License-Identifier: GPL-2.0-only
"""pytest set-up for boot-test/: its modules and the project's nsgen on the
path, and the kernel's own kunit_parser, from a kernel tree (KSRC, else the
unpacked default tree) or, failing that, from the Debian tarball."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from boot_results import KUNIT_TOOL, load_parser  # noqa: E402
from nsgen import tree  # noqa: E402
from nsgen.run import run  # noqa: E402

TARBALL = Path('/usr/src/linux-source-6.12.tar.xz')


def kernel_tools() -> Path:
    """A directory holding the kernel's tools/testing/kunit."""
    workdir = tree.default_workdir()
    for candidate in (os.environ.get('KSRC'),
                      workdir / 'src' / 'linux-source-6.12'):
        if candidate and (Path(candidate) / KUNIT_TOOL).is_dir():
            return Path(candidate)
    cache = workdir / 'cache' / 'kunit-tool'
    top = cache / 'linux-source-6.12'
    if not (top / KUNIT_TOOL / 'kunit_parser.py').is_file():
        if not TARBALL.is_file():
            pytest.fail(f'no kernel tree and no {TARBALL}: run make deps')
        cache.mkdir(parents=True, exist_ok=True)
        run(['tar', '-xf', TARBALL, '-C', cache, '--wildcards',
             f'linux-source-6.12/{KUNIT_TOOL}/*.py'], timeout=300)
    return top


@pytest.fixture(scope='session')
def ksrc_tools() -> Path:
    return kernel_tools()


@pytest.fixture(scope='session')
def kunit_parser(ksrc_tools: Path) -> ModuleType:
    return load_parser(ksrc_tools)
