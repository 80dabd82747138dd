"""Run spatch over many files: in parallel, with a per-file timeout, a cache,
and a failure report that does not trust spatch's exit status."""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .run import ToolError, run

MIN_VERSION = (1, 1, 0)
GROUP = 48            # files per spatch process, at most (each start ~0.25 s)
FILE_TIMEOUT = 120   # seconds spatch may spend on one file


@dataclass(frozen=True)
class Spatch:
    """How spatch is invoked: binary, version, semantic patch and options."""
    binary: str
    version: str
    cocci: Path
    options: tuple[str, ...]

    def argv(self, files: Sequence[str]) -> list[str]:
        return [self.binary, "--sp-file", str(self.cocci), *self.options,
                "--in-place", "--very-quiet", *files]

    def key(self) -> str:
        """What a cached result depends on: spatch's version, the semantic
        patch and the options, with files (--macro-file) by their content so
        that another checkout of the project shares the cache."""
        h = hashlib.sha256()
        h.update(self.version.encode())
        h.update(self.cocci.read_bytes())
        for opt in self.options:
            path = Path(opt)
            if path.is_absolute() and path.is_file():
                h.update(b"file:" + path.read_bytes())
            else:
                h.update(opt.encode())
            h.update(b"\0")
        return h.hexdigest()


@dataclass(frozen=True)
class SpatchResult:
    changed: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]   # (file, reason)
    cached: int
    elapsed: float


def find_spatch(binary: str = "spatch") -> str:
    """Return spatch's version, or raise a ToolError saying what to do."""
    proc = run([binary, "--version"], timeout=30)
    m = re.search(r"spatch version (\d+)\.(\d+)\.(\d+)", proc.stdout)
    if not m:
        raise ToolError(f"{binary}: cannot read its version; "
                        "install coccinelle (make deps)")
    version = tuple(int(x) for x in m.groups())
    if version < MIN_VERSION:
        raise ToolError(f"{binary} {m.group(0).split()[-1]} is too old: "
                        f"need {'.'.join(map(str, MIN_VERSION))} or newer")
    return ".".join(map(str, version))


class Progress:
    """'done/total, elapsed' on stderr, rewritten in place on a terminal."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.done = what, total, 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.done == self.total or now - self.last > (0.2 if self.tty else 10):
            self.last = now
            end = "\r" if self.tty and self.done < self.total else "\n"
            sys.stderr.write(f"  {self.what}: {self.done}/{self.total} files, "
                             f"{now - self.start:.1f} s{end}")
            sys.stderr.flush()


def _run_group(sp: Spatch, root: Path, files: list[str],
               workdir: Path) -> list[tuple[str, str]]:
    """Run one spatch process; return the files that failed and why."""
    paths = [str(root / f) for f in files]
    try:
        proc = run(sp.argv(paths), cwd=workdir, check=False,
                   timeout=FILE_TIMEOUT * len(files) + 60)
    except ToolError as e:
        return [(f, str(e)) for f in files]
    failed: list[tuple[str, str]] = []
    err = proc.stderr
    for f in files:
        for pat in (rf"EXN:.*{re.escape(f)}", rf"{re.escape(f)}.*(timeout|TIMEOUT)",
                    rf"(?i)timeout.*{re.escape(f)}"):
            m = re.search(pat, err)
            if m:
                failed.append((f, m.group(0).strip()[:200]))
                break
    if proc.returncode != 0 and not failed:
        if len(files) == 1:
            lines = err.strip().splitlines() or ["no output"]
            failed.append((files[0], f"spatch exit {proc.returncode}: {lines[-1]}"))
        else:
            # One file broke the whole group: find it by running them singly.
            for f in files:
                failed.extend(_run_group(sp, root, [f], workdir))
    return failed


def run_spatch(sp: Spatch, root: Path, files: Sequence[str], cache: Path,
               jobs: int) -> SpatchResult:
    """Apply sp in place to files (relative to root), reusing cached results.

    The cache maps sha256(spatch key, file path, file content) to the file's
    content after conversion.
    """
    start = time.monotonic()
    key = sp.key()
    cache.mkdir(parents=True, exist_ok=True)
    todo: list[str] = []
    changed: list[str] = []
    cached = 0
    before: dict[str, bytes] = {}
    entries: dict[str, Path] = {}
    for f in sorted(files):
        data = (root / f).read_bytes()
        before[f] = data
        h = hashlib.sha256(f"{key}\0{f}\0".encode() + data).hexdigest()
        entries[f] = cache / h[:2] / h
        if entries[f].exists():
            out = entries[f].read_bytes()
            if out != data:
                (root / f).write_bytes(out)
                changed.append(f)
            cached += 1
        else:
            todo.append(f)
    # at least four groups a job, so that the jobs end close together
    size = max(1, min(GROUP, -(-len(todo) // (4 * max(1, jobs)))))
    groups = [todo[i:i + size] for i in range(0, len(todo), size)]
    progress = Progress("spatch", len(todo))
    failed: list[tuple[str, str]] = []
    if todo:
        with tempfile.TemporaryDirectory(prefix="ns-spatch-") as tmp, \
                ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            def one(group: list[str]) -> list[tuple[str, str]]:
                res = _run_group(sp, root, group, Path(tmp))
                progress.step(len(group))
                return res
            for res in pool.map(one, groups):
                failed.extend(res)
    bad = {f for f, _ in failed}
    for f in todo:
        if f in bad:
            continue
        after = (root / f).read_bytes()
        if after != before[f]:
            changed.append(f)
        entries[f].parent.mkdir(exist_ok=True)
        tmpf = entries[f].with_suffix(".tmp%d" % os.getpid())
        tmpf.write_bytes(after)
        tmpf.replace(entries[f])
    return SpatchResult(tuple(sorted(changed)), tuple(sorted(failed)), cached,
                        time.monotonic() - start)
