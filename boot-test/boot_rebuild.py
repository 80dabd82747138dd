# SPDX-License-Identifier: GPL-2.0-only
"""A developer's rebuild of an in-tree module: make M=<tree>/arch/x86/kvm.

kvm is built again from the boot test's work tree (a git worktree of the
tool's, never the user's tree) as an external module against the build
directory, as a developer rebuilds one module of the tree.  modpost, which
sees no signatures, must let it through with a warning (it is the tree's
own code) instead of stopping it; the loader then decides by signature:
signed with the build's key it loads and gets fpu_swap_kvm_fpstate;
unsigned, or signed with a key the kernel trusts only through a
certificate the build key signed, it is refused with the reason.

The build writes its objects into the work tree's arch/x86/kvm (kbuild
puts an M= build's output next to its sources); 'make M=... clean'
removes them again, so that the O= build never sees them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import boot_keys
from boot_kernel import Build
from boot_results import Case, Status
from nsgen.run import ToolError, tail

DIRECTORY = 'arch/x86/kvm'
# What modpost says instead of stopping the build (patch 0006).
WARNING = "an M= build of the kernel tree's own code"
# guest name -> signing key of boot_keys ('' unsigned, 'build' the build's)
COPIES = {'kvm_rebuilt_signed': 'build',
          'kvm_rebuilt_unsigned': '',
          'kvm_rebuilt_trusted_key': 'secondary-carried'}
NEEDS = 'include/linux/verification.h'


def module_dir(b: Build) -> Path:
    return b.build_dir / 'boot-test-modules' / 'rebuilt'


def skip_reason(b: Build) -> str | None:
    """This kernel has no rule for M= builds of its own directories."""
    if 'VERIFY_USE_BUILTIN_SIGNER' in (b.ksrc / NEEDS).read_text():
        return None
    return ('this kernel leaves M= builds of its own directories to '
            'modpost\'s external-module rule')


def build(b: Build, log: Path) -> list[Case]:
    """Rebuild kvm with M=, check modpost's answer, keep the signed,
    unsigned and otherwise signed copies for the guest."""
    name = 'modpost_warns_on_an_in_tree_rebuild'
    out = module_dir(b)
    if out.exists():
        shutil.rmtree(out)
    reason = skip_reason(b)
    if reason:
        return [Case(name, Status.SKIP, reason=reason)]
    src = b.ksrc / DIRECTORY
    try:
        proc = b.module_make(src, 'modules', log=log)
        if proc.returncode != 0:
            return [Case(name, Status.FAIL, [
                f'make M={src} exit {proc.returncode} (see {log})',
                *tail(proc.stdout, 8).splitlines()])]
        if WARNING not in proc.stdout:
            return [Case(name, Status.FAIL, [
                f'make M={src} passed without modpost\'s warning '
                f'"{WARNING}"'])]
        out.mkdir(parents=True)
        for copy, key in COPIES.items():
            ko = out / f'{copy}.ko'
            shutil.copy(src / 'kvm.ko', ko)
            if key == 'build':
                pem = b.build_dir / boot_keys.BUILD_KEY
                boot_keys.sign_with(b, pem, ko)
            elif key:
                boot_keys.sign(b, key, ko)
    except (ToolError, OSError) as e:
        return [Case(name, Status.FAIL, [str(e)])]
    finally:
        b.module_make(src, 'clean', log=log)
    return [Case(name, Status.PASS)]


def built(b: Build) -> list[tuple[str, Path]]:
    return [(copy, ko) for copy in COPIES
            if (ko := module_dir(b) / f'{copy}.ko').is_file()]


def skipped(b: Build) -> dict[str, str]:
    reason = skip_reason(b)
    return {copy: reason for copy in COPIES} if reason else {}
