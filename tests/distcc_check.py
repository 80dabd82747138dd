#!/usr/bin/env python3
"""Kernel builds through a build farm: a real distccd on 127.0.0.1 only
(as the unprivileged user nobody when run as root), the boot test's module
builds sent to it with CC="distcc gcc", and the jobs counted in distccd's
own log.  distcc compiles "localhost" locally, so the host is named by its
address; DISTCC_FALLBACK=0 makes a job that cannot be sent fail instead of
quietly compiling here.

  tests/distcc_check.py --ksrc PATCHED --build-dir WORKDIR/build-boot-test
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT), str(PROJECT / "boot-test")]

import boot_kernel  # noqa: E402
import boot_modules  # noqa: E402
from nsgen.run import ToolError, background  # noqa: E402

# Modules the loader accepts: built without modpost's errors turned off.
MODULES = ("dma_buf_import", "clevo_wmi")
JOB_DONE = re.compile(r"COMPILE_OK exit:0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, timeout: float = 10) -> None:
    """Until distccd accepts connections (it forks its workers first)."""
    end = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > end:
                raise ToolError(f"distccd does not listen on 127.0.0.1:{port}"
                                f" after {timeout:.0f} s") from None
            time.sleep(0.1)


def distccd_command(port: int, log: Path) -> list[str]:
    cmd = ["distccd", "--daemon", "--no-detach", "--allow", "127.0.0.1",
           "--listen", "127.0.0.1", "--port", str(port), "--jobs", "2",
           "--log-file", str(log), "--log-level", "info"]
    if os.geteuid() == 0:
        cmd += ["--user", "nobody"]
    return cmd


def build_through(ksrc: Path, build_dir: Path, scratch: Path, port: int,
                  jobs: int) -> list[str]:
    """Build MODULES with distcc as the compiler wrapper; the problems."""
    b = boot_kernel.Build.of(ksrc, build_dir, jobs, "distcc")
    b.env.update({"DISTCC_HOSTS": f"127.0.0.1:{port}/{jobs}",
                  "DISTCC_FALLBACK": "0", "DISTCC_DIR": str(scratch / "dcc")})
    (scratch / "dcc").mkdir()
    problems = []
    for name in MODULES:
        mdir = scratch / name
        boot_modules.set_up(mdir, boot_modules.SOURCES / f"{name}.c", name)
        proc = b.module_make(mdir, "modules")
        if proc.returncode != 0 or not (mdir / f"{name}.ko").is_file():
            problems.append(f"{name} did not build through distcc: "
                            f"{proc.stdout.strip().splitlines()[-1:]}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ksrc", required=True, type=Path,
                    help="the tree the build directory was built from")
    ap.add_argument("--build-dir", required=True, type=Path,
                    help="a built kernel (the boot test's build directory)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    print("TAP version 13\n1..1")
    try:
        if not (args.build_dir / "Module.symvers").is_file():
            raise ToolError(f"{args.build_dir}: no built kernel; run the "
                            "boot test first")
        with tempfile.TemporaryDirectory(prefix="distcc-check.") as tmp:
            scratch = Path(tmp)
            scratch.chmod(0o755)
            log = scratch / "distccd.log"
            log.touch()
            log.chmod(0o666)
            port = free_port()
            with background(distccd_command(port, log),
                            log=scratch / "distccd.out"):
                wait_listening(port)
                problems = build_through(args.ksrc, args.build_dir, scratch,
                                         port, max(1, args.jobs))
            done = len(JOB_DONE.findall(log.read_text(errors="replace")))
            # each module: its .c and its .mod.c
            want = 2 * len(MODULES)
            if done < want:
                problems.append(f"distccd's log counts {done} compile jobs, "
                                f"expected at least {want}")
    except ToolError as e:
        problems, done = [str(e)], 0
    if problems:
        print(f"not ok 1 - modules built through distcc on 127.0.0.1: "
              f"{'; '.join(problems)}")
        print("0 passed, 1 failed")
        return 1
    print(f"ok 1 - {len(MODULES)} modules built through distcc on "
          f"127.0.0.1: {done} jobs in distccd's log")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
