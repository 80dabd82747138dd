# SPDX-License-Identifier: GPL-2.0-only
"""The guest's initramfs: busybox-static, /init, the list of guest cases
and the modules, made by the kernel's own usr/gen_init_cpio from the list
file initramfs.list (data), with one line added per built test module and
one /modules/NAME.skip (its reason) per module this kernel skips.
Reproducible: gen_init_cpio -t 0, and gzip without name or time."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Mapping, Sequence

from nsgen.run import ToolError, run

HERE = Path(__file__).resolve().parent
INIT = HERE / 'init'
LIST = HERE / 'initramfs.list'
GUEST_CASES = HERE / 'guest-cases'
# The cases of the second boot, with module.sig_enforce=1 (what
# CONFIG_MODULE_SIG_FORCE=y or lockdown enforce): /init runs this list when
# the kernel command line says boottest.cases=enforce.
ENFORCE = 'enforce'
GUEST_CASES_ENFORCE = HERE / f'guest-cases-{ENFORCE}'


def guest_cases(path: Path = GUEST_CASES) -> list[str]:
    """The guest's cases in order: what /init runs, and the plan the host
    expects it to print."""
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def find_busybox() -> str:
    busybox = shutil.which('busybox')
    if busybox is None:
        raise ToolError('busybox: not found; install it '
                        '(apt-get install busybox-static)')
    if b'/ld-linux' in Path(busybox).read_bytes()[:4096]:
        raise ToolError(f'{busybox}: dynamically linked; install '
                        'busybox-static')
    return busybox


def list_file(modules: Sequence[tuple[str, Path]],
              skips: Sequence[tuple[str, Path]] = ()) -> str:
    """initramfs.list with one line per built test module and one per
    skip file (the guest's case reads the reason from it)."""
    lines = [LIST.read_text().rstrip('\n')]
    lines += [f'file /modules/{name}.ko {ko} 0644 0 0'
              for name, ko in modules]
    lines += [f'file /modules/{name}.skip {path} 0644 0 0'
              for name, path in skips]
    return '\n'.join(lines) + '\n'


def write_skips(skipped: Mapping[str, str], out: Path) -> list[tuple[str, Path]]:
    """out/skip/NAME.skip holding the reason, per skipped module."""
    folder = out / 'skip'
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files = []
    for name, reason in sorted(skipped.items()):
        path = folder / f'{name}.skip'
        path.write_text(reason + '\n')
        files.append((name, path))
    return files


def make_initramfs(build_dir: Path, modules: Sequence[tuple[str, Path]],
                   out: Path, skipped: Mapping[str, str] | None = None,
                   signed: Path | None = None, keys: Path | None = None
                   ) -> Path:
    """out/initramfs.cpio.gz (and out/initramfs.list, for reading)."""
    busybox = find_busybox()
    gen = build_dir / 'usr' / 'gen_init_cpio'
    if not gen.is_file():
        raise ToolError(f'{gen}: missing; is CONFIG_BLK_DEV_INITRD set?')
    listing = out / 'initramfs.list'
    listing.write_text(list_file(modules, write_skips(skipped or {}, out)))
    env = {'BUSYBOX': busybox, 'INIT': str(INIT),
           'GUEST_CASES': str(GUEST_CASES),
           'GUEST_CASES_ENFORCE': str(GUEST_CASES_ENFORCE),
           'KBUILD': str(build_dir),
           'SIGNED': str(signed or build_dir), 'KEYS': str(keys or build_dir)}
    cpio = out / 'initramfs.cpio'
    run([gen, '-t', '0', listing], env=env, stdout=cpio)
    image = out / 'initramfs.cpio.gz'
    # Like gzip -n: no name, time 0, so the same inputs give the same bytes.
    with image.open('wb') as f, gzip.GzipFile(
            filename='', mode='wb', fileobj=f, mtime=0) as gz:
        gz.write(cpio.read_bytes())
    cpio.unlink()
    return image
