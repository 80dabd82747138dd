# SPDX-License-Identifier: GPL-2.0-only
"""A bare namespace in the kernel's own code must stop the build.

A scratch file is added to the boot test's work tree (a git worktree of
the tool's, never the user's tree) and compiled as an in-tree object in the
boot test's build directory, once per spelling: string literals build; a
bare identifier in EXPORT_SYMBOL_NS_GPL() or in MODULE_IMPORT_NS() fails,
with the check's name among the compiler's notes.  The file and its
objects are removed afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from boot_kernel import Build
from boot_results import Case, Status
from nsgen.run import tail

CHECK = '__namespace_must_be_a_string_literal'
NAME = 'boot_test_ns_spelling'
SOURCE = '''// SPDX-License-Identifier: GPL-2.0-only
#include <linux/export.h>
#include <linux/module.h>

int boot_test_ns_spelling(void);

int boot_test_ns_spelling(void)
{{
	return 0;
}}
EXPORT_SYMBOL_NS_GPL(boot_test_ns_spelling, {export});
MODULE_IMPORT_NS({import_});
'''
QUOTED, BARE = '"BOOT_TEST_NS"', 'BOOT_TEST_NS'
# (case, export's namespace, import's namespace, builds)
VARIANTS = (
    ('in_tree_quoted_namespaces_build', QUOTED, QUOTED, True),
    ('in_tree_bare_export_fails_build', BARE, QUOTED, False),
    ('in_tree_bare_import_fails_build', QUOTED, BARE, False),
)


def skip_reason(export_h: str) -> Optional[str]:
    """Why this kernel has no named check to find, or None."""
    if CHECK in export_h:
        return None
    return (f'this kernel has no {CHECK}() (upstream: a bare namespace '
            'fails by itself, with no message of ours)')


def compile_one(b: Build, export: str, import_: str, log: Path
                ) -> tuple[int, str]:
    """Compile the scratch file as lib/NAME.o; (exit status, output)."""
    src = b.ksrc / 'lib' / f'{NAME}.c'
    objs = [b.build_dir / 'lib' / f'{NAME}.o',
            b.build_dir / 'lib' / f'.{NAME}.o.cmd']
    try:
        src.write_text(SOURCE.format(export=export, import_=import_))
        proc = b.make(f'lib/{NAME}.o', log=log, check=False)
        return proc.returncode, proc.stdout + (proc.stderr or '')
    finally:
        src.unlink(missing_ok=True)
        for o in objs:
            o.unlink(missing_ok=True)


def cases(b: Build, log: Path) -> list[Case]:
    export_h = (b.ksrc / 'include/linux/export.h').read_text()
    reason = skip_reason(export_h)
    if reason:
        return [Case(name, Status.SKIP, reason=reason)
                for name, *_ in VARIANTS]
    found = []
    for name, export, import_, builds in VARIANTS:
        status, out = compile_one(b, export, import_,
                                  log.with_name(f'{log.stem}-{name}.log'))
        if builds and status != 0:
            found.append(Case(name, Status.FAIL, [
                f'lib/{NAME}.o did not build:', *tail(out, 8).splitlines()]))
        elif not builds and status == 0:
            found.append(Case(name, Status.FAIL, [
                f'lib/{NAME}.o built with a bare namespace']))
        elif not builds and CHECK not in out:
            found.append(Case(name, Status.FAIL, [
                f'the build failed without naming {CHECK}:',
                *tail(out, 8).splitlines()]))
        else:
            found.append(Case(name, Status.PASS))
    return found
