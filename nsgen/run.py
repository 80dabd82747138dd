"""The one way this project runs an external program.

Every other file (generate.py, nsgen/, boot-test/, tests/, bench/) calls
run() below: it sets the working directory and the environment, captures
the output, applies a timeout (killing the whole process group, so that a
make's compilers go too) and turns a failure into one ToolError naming the
command.  Long commands can stream their output to a log file or echo it
to stderr as it comes, and can be stopped early by a watch function.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

TAIL_LINES = 20


class ToolError(Exception):
    """A failure to report to the user as one line."""


class Timeout(ToolError):
    """A program ran past its timeout and was killed."""


class Stopped(ToolError):
    """A program was killed because its watch function said so."""


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last lines of text."""
    return "\n".join(text.splitlines()[-lines:])


def _kill(proc: subprocess.Popen[str]) -> None:
    """Kill proc and everything it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _follow(argv: list[str], cwd: Path | None, env: dict[str, str] | None,
            timeout: float | None, log: Path | None, echo: str | None,
            watch: Callable[[], str | None] | None
            ) -> subprocess.CompletedProcess[str]:
    """Run argv with stdout and stderr merged, streamed as they come.

    Each line goes to the log file (appended) and, with echo set, to our
    stderr behind that prefix.  Every 0.1 s the timeout and the watch
    function are checked; the first to object stops the program.
    """
    lines: list[str] = []
    sink = log.open("a") if log is not None else None
    try:
        if sink is not None:
            sink.write(f"$ {shlex.join(argv)}\n")
            sink.flush()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, text=True,
                                errors="replace", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if sink is not None:
                    sink.write(line)
                    sink.flush()
                if echo is not None:
                    sys.stderr.write(echo + line)
                    sys.stderr.flush()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        start = time.monotonic()
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            why = watch() if watch is not None else None
            if why is not None:
                _kill(proc)
                raise Stopped(f"{shlex.join(argv)}: stopped: {why}")
            if timeout is not None and time.monotonic() - start > timeout:
                _kill(proc)
                raise Timeout(f"timed out after {timeout:.0f} s: "
                              f"{shlex.join(argv)}")
        reader.join()
    finally:
        if sink is not None:
            sink.close()
    return subprocess.CompletedProcess(argv, proc.returncode,
                                       "".join(lines), "")


def run(cmd: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
        timeout: float | None = 600, env: Mapping[str, str] | None = None,
        check: bool = True, stdin: str | None = None,
        stdout: Path | None = None, log: Path | None = None,
        echo: str | None = None,
        watch: Callable[[], str | None] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Run cmd, capture its output, and turn a failure into a ToolError.

    env adds to (or overrides) our own environment.  By default stdout and
    stderr are captured apart, as text.  stdout=PATH writes the standard
    output to that file as bytes (stderr still captured).  log=PATH,
    echo=PREFIX or watch=FN merge the two streams into the result's stdout
    and stream them as they come: appended to the log, echoed to stderr,
    and watch() is asked every 0.1 s whether to stop (a reason string
    stops the program with Stopped).  With check=False a non-zero exit is
    returned instead of raised.  The error names the command and quotes
    the last line of its output.
    """
    argv = [str(a) for a in cmd]
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    follow = log is not None or echo is not None or watch is not None
    if follow and (stdin is not None or stdout is not None):
        raise ValueError("stdin= and stdout= do not go with log=, echo=, "
                         "watch=")
    try:
        if follow:
            proc = _follow(argv, cwd, full_env, timeout, log, echo, watch)
        elif stdout is not None:
            with stdout.open("wb") as f:
                proc = subprocess.run(argv, cwd=cwd, env=full_env,
                                      stdin=subprocess.DEVNULL, stdout=f,
                                      stderr=subprocess.PIPE, text=True,
                                      errors="replace", timeout=timeout,
                                      check=False)
            proc.stdout = ""
        else:
            proc = subprocess.run(argv, cwd=cwd, env=full_env, input=stdin,
                                  stdin=None if stdin is not None
                                  else subprocess.DEVNULL,
                                  capture_output=True, text=True,
                                  timeout=timeout, check=False,
                                  errors="surrogateescape")
    except FileNotFoundError:
        raise ToolError(f"{argv[0]}: not found; run 'make deps' "
                        "(or install it) and try again") from None
    except subprocess.TimeoutExpired:
        raise Timeout(f"timed out after {timeout:.0f} s: "
                      f"{shlex.join(argv)}") from None
    if check and proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        last = lines[-1] if lines else "(no output)"
        where = f" (full log: {log})" if log is not None else ""
        raise ToolError(f"{shlex.join(argv)} failed "
                        f"(exit {proc.returncode}): {last}{where}")
    return proc


@contextlib.contextmanager
def background(cmd: Sequence[str | os.PathLike[str]], *, log: Path,
               cwd: Path | None = None,
               env: Mapping[str, str] | None = None
               ) -> Iterator[subprocess.Popen[str]]:
    """Run cmd (a server) for the duration of a with block, its output
    going to log; on leaving the block it is killed with everything it
    started.  An error if it exits before the block ends."""
    argv = [str(a) for a in cmd]
    full_env = None if env is None else {**os.environ, **env}
    with log.open("a") as sink:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=full_env, text=True,
                                    stdin=subprocess.DEVNULL, stdout=sink,
                                    stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except FileNotFoundError:
            raise ToolError(f"{argv[0]}: not found; run 'make deps' "
                            "(or install it) and try again") from None
        try:
            yield proc
            if proc.poll() is not None:
                raise ToolError(f"{shlex.join(argv)} exited early "
                                f"(exit {proc.returncode}; log: {log})")
        finally:
            _kill(proc)


def progress(msg: str) -> None:
    """A progress line for the user: stderr, at once."""
    print(msg, file=sys.stderr, flush=True)
