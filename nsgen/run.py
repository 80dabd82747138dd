"""The one way this project runs an external program."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Mapping, Sequence


class ToolError(Exception):
    """A failure to report to the user as one line."""


def run(cmd: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
        timeout: float | None = 600, env: Mapping[str, str] | None = None,
        check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run cmd, capture its output, and turn a failure into a ToolError.

    The error names the command and quotes the last line of its stderr.
    """
    argv = [str(a) for a in cmd]
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=full_env, input=stdin,
                              capture_output=True, text=True,
                              timeout=timeout, check=False,
                              errors="surrogateescape")
    except FileNotFoundError:
        raise ToolError(f"{argv[0]}: not found; run 'make deps' "
                        "(or install it) and try again") from None
    except subprocess.TimeoutExpired:
        raise ToolError(f"timed out after {timeout:.0f} s: "
                        f"{shlex.join(argv)}") from None
    if check and proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        last = lines[-1] if lines else "(no output)"
        raise ToolError(f"{shlex.join(argv)} failed "
                        f"(exit {proc.returncode}): {last}")
    return proc
