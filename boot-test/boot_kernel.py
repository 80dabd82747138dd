# SPDX-License-Identifier: GPL-2.0-only
"""Building the boot test's kernel out of tree: the make command (compiler
wrapper and job count included), and bzImage + modules."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from nsgen import kbuild
from nsgen.run import ToolError, progress, run

BUILD_TIMEOUT = 3 * 3600
MAKE_TIMEOUT = 600
PIGGY = 'arch/x86/boot/compressed/piggy.o'
REQUIRED = ('Makefile', 'kernel/module/main.c', 'scripts/mod/modpost.c')


@dataclasses.dataclass
class Build:
    """A kernel tree (only read) and its build directory."""
    ksrc: Path
    build_dir: Path
    jobs: int = 1
    wrapper: str = ''          # compiler wrapper words, e.g. "ccache"
    env: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, ksrc: Path, build_dir: Path, jobs: int,
           wrapper_choice: str = kbuild.AUTO) -> 'Build':
        """Resolve the paths and the compiler wrapper (saying which)."""
        wrapper, note = kbuild.resolve_wrapper(wrapper_choice)
        if note:
            progress(f'build: {note}')
        ksrc, build_dir = ksrc.resolve(), build_dir.resolve()
        return cls(ksrc, build_dir, max(1, jobs), wrapper,
                   kbuild.wrapper_env(wrapper, ksrc, build_dir))

    @property
    def cc(self) -> str:
        return kbuild.cc(self.wrapper)

    def say(self, msg: str) -> None:
        progress(msg)

    def make_args(self, *targets: str) -> list[str]:
        return ['make', '-C', str(self.ksrc), f'O={self.build_dir}',
                f'CC={self.cc}', f'-j{self.jobs}', *targets]

    def make(self, *targets: str, log: Optional[Path] = None,
             timeout: float = MAKE_TIMEOUT,
             check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(self.make_args(*targets), env=self.env, log=log,
                   timeout=timeout, check=check)

    def module_make(self, mdir: Path, *args: str,
                    log: Optional[Path] = None
                    ) -> subprocess.CompletedProcess[str]:
        """make M=mdir against this build; a failure is returned, with
        stderr (where modpost's messages go) after stdout in its stdout."""
        proc = run(['make', '-C', str(self.build_dir), f'M={mdir}',
                    f'CC={self.cc}', *args], env=self.env, log=log,
                   timeout=MAKE_TIMEOUT, check=False)
        proc.stdout += proc.stderr or ''
        proc.stderr = ''
        return proc


def check_tree(b: Build) -> str:
    """The tree's version; an error unless it is a kernel tree."""
    for path in REQUIRED:
        if not (b.ksrc / path).is_file():
            raise ToolError(f'{b.ksrc}: not a kernel tree (no {path}); '
                            'pass --ksrc with the patched tree')
    version = run(['make', '-s', '-C', b.ksrc, 'kernelversion']).stdout
    return version.strip()


def build_kernel(b: Build, log: Path) -> None:
    """bzImage and modules of the configured build directory.

    certs/ is built first and never through ccache: its objects .incbin
    the build's own key (certs/signing_key.x509), which no cache hash
    covers, so a cached object from another build directory would embed
    another key, and the kernel would refuse its own signed modules.
    piggy.o, for the same reason, is assembled again without it."""
    b.say(f'build: certs/ without a compiler cache, then '
          f'{" ".join(b.make_args("bzImage", "modules"))} (log: {log})')
    run(b.make_args('certs/'), env={**b.env, 'CCACHE_DISABLE': '1'},
        log=log, timeout=BUILD_TIMEOUT)
    b.make('bzImage', 'modules', log=log, timeout=BUILD_TIMEOUT)
    # The same holds for the compressed kernel: piggy.o .incbins the
    # compressed vmlinux, and its source only names the sizes, so a kernel
    # that differs from an earlier one in equal-length strings alone (a
    # version, a date) came back from the cache with the earlier kernel
    # inside.  Assembled again without the cache, and bzImage relinked.
    (b.build_dir / PIGGY).unlink(missing_ok=True)
    run(b.make_args('bzImage'), env={**b.env, 'CCACHE_DISABLE': '1'},
        log=log, timeout=BUILD_TIMEOUT)


def kernel_release(b: Build) -> str:
    """The release the build wrote (include/config/kernel.release)."""
    f = b.build_dir / 'include/config/kernel.release'
    return f.read_text().strip() if f.is_file() else ''


def keep_outputs(b: Build, out: Path) -> None:
    """Module.symvers and where the build is, beside the results."""
    shutil.copy2(b.build_dir / 'Module.symvers', out / 'Module.symvers')
    (out / 'build-dir').write_text(f'{b.build_dir}\n')
