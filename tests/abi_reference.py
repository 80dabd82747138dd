#!/usr/bin/env python3
"""The reference for make abi-check, measured the expensive way (by hand:
two kernel builds, not part of make check).

  tests/abi_reference.py --ksrc PRISTINE --workdir WORKDIR [--series DIR]
                         [--out DIR] [--jobs N] [--cc-wrapper auto]

The boot test's configuration (x86_64 defconfig + boot-test/config.fragment)
with CONFIG_MODVERSIONS=y is built twice in WORKDIR/abi-reference: from the
pristine tree and from the tree with the series (default out/series)
applied.  Then:

1. the Module.symvers of the two builds are compared: every symbol of the
   pristine kernel must keep its CRC (the namespace column may change: that
   is what the series does);
2. a module that reaches struct module (THIS_MODULE, try_module_get(),
   module_put(), register_module_notifier()) is built against the pristine
   build (its headers and its Module.symvers: its __versions are the
   pristine CRCs, its .gnu.linkonce.this_module the pristine struct
   module) and loaded on the patched kernel, booted in QEMU: it must load
   and run, with no "disagrees about version" in the log.

TAP on stdout, the comparison in --out/symvers-diff.txt (default
out/abi-reference) and the guest's log beside it; the last line is
'N passed, N failed'.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "boot-test"),
                str(PROJECT / "tests")]

import boot_config  # noqa: E402
import boot_initramfs  # noqa: E402
import boot_kernel  # noqa: E402
import boot_qemu  # noqa: E402
import scratch_tree  # noqa: E402
from nsgen import abi  # noqa: E402
from nsgen.run import progress, run  # noqa: E402
from nsgen.tree import attach_worktree  # noqa: E402

MODULE = r'''// SPDX-License-Identifier: GPL-2.0
/* Built against the pristine kernel, loaded on the patched one. */
#include <linux/module.h>
#include <linux/notifier.h>

static int abi_ref_event(struct notifier_block *nb, unsigned long action,
			 void *data)
{
	return NOTIFY_DONE;
}

static struct notifier_block abi_ref_nb = {
	.notifier_call = abi_ref_event,
};

static int __init abi_ref_init(void)
{
	int ret;

	if (!try_module_get(THIS_MODULE))
		return -ENODEV;
	ret = register_module_notifier(&abi_ref_nb);
	pr_info("abi_ref: %s, refcount %d, notifier %d\n", THIS_MODULE->name,
		module_refcount(THIS_MODULE), ret);
	module_put(THIS_MODULE);
	return ret;
}

static void __exit abi_ref_exit(void)
{
	unregister_module_notifier(&abi_ref_nb);
}

module_init(abi_ref_init);
module_exit(abi_ref_exit);
MODULE_DESCRIPTION("Built against the pristine kernel");
MODULE_LICENSE("GPL");
'''

INIT = '''#!/bin/sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev
if insmod /abi_ref.ko; then
	echo "ABI-REF: loaded"
	grep '^abi_ref ' /proc/modules
	rmmod abi_ref && echo "ABI-REF: unloaded"
else
	echo "ABI-REF: refused"
fi
dmesg | grep -e abi_ref -e 'disagrees about version' -e 'no symbol version'
poweroff -f
'''

LIST = '''dir /dev 0755 0 0
nod /dev/console 0600 0 0 c 5 1
dir /bin 0755 0 0
dir /proc 0755 0 0
file /bin/busybox {busybox} 0755 0 0
slink /bin/sh busybox 0777 0 0
file /init {init} 0755 0 0
file /abi_ref.ko {ko} 0644 0 0
'''


def symvers(path: Path) -> dict[str, tuple[str, str]]:
    """Module.symvers: symbol -> (crc, module)."""
    out = {}
    for line in path.read_text().splitlines():
        f = line.split("\t")
        if len(f) >= 4:
            out[f[1]] = (f[0], f[2])
    return out


def build(ksrc: Path, build_dir: Path, args: argparse.Namespace,
          fragment: Path) -> boot_kernel.Build:
    b = boot_kernel.Build.of(ksrc, build_dir, args.jobs, args.cc_wrapper)
    log = build_dir.parent / f"{build_dir.name}.log"
    build_dir.mkdir(parents=True, exist_ok=True)
    boot_config.configure(b, log, fragment)
    progress(f"abi-reference: building {ksrc} in {build_dir}")
    boot_kernel.build_kernel(b, log)
    return b


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = scratch_tree.parse(__doc__, "abi-reference", argv)
    args, ksrc, workdir, out = a.args, a.ksrc, a.workdir, a.out
    _, base, head = abi.series_revs(ksrc, workdir, a.series)
    git_dir = workdir / "baseline.git"
    ref = workdir / "abi-reference"
    ref.mkdir(exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    fragment = ref / "config.fragment"
    fragment.write_text(boot_config.FRAGMENT.read_text().rstrip("\n") +
                        "\nCONFIG_MODVERSIONS=y\n")
    trees = {}
    for name, rev in (("pristine", base), ("patched", head)):
        src = attach_worktree(git_dir, rev, ref / f"src-{name}").work_tree
        assert src is not None
        trees[name] = build(src, ref / f"build-{name}", args, fragment)
    print("TAP version 13")
    print("1..2")
    failed = 0
    before = symvers(trees["pristine"].build_dir / "Module.symvers")
    after = symvers(trees["patched"].build_dir / "Module.symvers")
    changed = sorted(s for s in before if s in after
                     and before[s][0] != after[s][0])
    gone = sorted(s for s in before if s not in after)
    new = sorted(s for s in after if s not in before)
    (out / "symvers-diff.txt").write_text(
        "".join(f"changed {s} {before[s][0]} -> {after[s][0]} "
                f"({before[s][1]})\n" for s in changed) +
        "".join(f"gone {s}\n" for s in gone) +
        "".join(f"new {s} {after[s][0]} ({after[s][1]})\n" for s in new))
    ok = not changed and not gone
    failed += not ok
    print(f"{'ok' if ok else 'not ok'} 1 - Module.symvers: {len(before)} "
          f"symbols of the pristine build, {len(changed)} CRCs changed, "
          f"{len(gone)} gone, {len(new)} new (symvers-diff.txt)")
    with tempfile.TemporaryDirectory(dir=ref) as tmp:
        mdir = Path(tmp) / "abi_ref"
        mdir.mkdir()
        (mdir / "abi_ref.c").write_text(MODULE)
        (mdir / "Kbuild").write_text("obj-m := abi_ref.o\n")
        proc = trees["pristine"].module_make(mdir, "modules")
        ko = mdir / "abi_ref.ko"
        if proc.returncode != 0 or not ko.is_file():
            print(f"not ok 2 - a module built against the pristine kernel "
                  f"loads on the patched one: it did not build: "
                  f"{proc.stdout[-800:]}")
            failed += 1
        else:
            versions = run(["modprobe", "--dump-modversions", str(ko)],
                           check=False).stdout
            init = Path(tmp) / "init"
            init.write_text(INIT)
            listing = Path(tmp) / "list"
            listing.write_text(LIST.format(
                busybox=boot_initramfs.find_busybox(), init=init, ko=ko))
            cpio = Path(tmp) / "initramfs.cpio"
            patched = trees["patched"].build_dir
            run([patched / "usr" / "gen_init_cpio", "-t", "0", listing],
                stdout=cpio)
            image = ref / "initramfs.cpio.gz"
            with image.open("wb") as f, gzip.GzipFile(
                    filename="", mode="wb", fileobj=f, mtime=0) as gz:
                gz.write(cpio.read_bytes())
            serial = out / "serial.log"
            problems = boot_qemu.boot_once(
                "tcg", patched / "arch/x86/boot/bzImage", image, serial,
                ref / "unused.ktap", 300)
            log = serial.read_text(errors="replace") if serial.is_file() \
                else ""
            ok = (not problems and "ABI-REF: loaded" in log
                  and "ABI-REF: unloaded" in log
                  and "disagrees about version" not in log)
            failed += not ok
            lines = [ln for ln in log.splitlines()
                     if "ABI-REF" in ln or "abi_ref" in ln
                     or "disagrees about version" in ln
                     or "no symbol version" in ln]
            print(f"{'ok' if ok else 'not ok'} 2 - a module built against "
                  "the pristine kernel (MODVERSIONS; "
                  f"{len(versions.splitlines())} symbol versions) loads on "
                  "the patched one")
            for line in problems + lines[:12]:
                print(f"    # {line}")
    print(f"{2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
