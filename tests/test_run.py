"""nsgen.run: the one helper that runs external programs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nsgen.run import Stopped, Timeout, ToolError, run, tail


def test_captures_stdout_and_stderr_apart() -> None:
    proc = run(["sh", "-c", "echo out; echo err >&2"])
    assert (proc.stdout, proc.stderr) == ("out\n", "err\n")


def test_failure_names_the_command_and_its_last_line() -> None:
    with pytest.raises(ToolError, match=r"^sh -c 'echo a; echo b >&2; "
                       r"exit 3' failed \(exit 3\): b$"):
        run(["sh", "-c", "echo a; echo b >&2; exit 3"])
    assert run(["false"], check=False).returncode == 1


def test_missing_program_is_one_line() -> None:
    with pytest.raises(ToolError, match="no-such-tool: not found"):
        run(["no-such-tool"])


def test_cwd_env_and_stdin(tmp_path: Path) -> None:
    proc = run(["sh", "-c", 'pwd; echo "$NS_X"; cat'], cwd=tmp_path,
               env={"NS_X": "x"}, stdin="in\n")
    assert proc.stdout == f"{tmp_path}\nx\nin\n"


def test_streams_to_log_and_returns_output(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("earlier\n")
    proc = run(["sh", "-c", "echo out; echo err >&2"], log=log)
    assert proc.stdout == "out\nerr\n"
    assert log.read_text() == ("earlier\n$ sh -c 'echo out; echo err >&2'\n"
                               "out\nerr\n")
    with pytest.raises(ToolError, match=r"^false failed \(exit 1\): "
                       r"\(no output\) \(full log: "):
        run(["false"], log=log)


def test_echo_prefixes_each_line(capsys: pytest.CaptureFixture[str]) -> None:
    proc = run(["printf", "a\\nb\\n"], echo="    ")
    assert proc.stdout == "a\nb\n"
    assert capsys.readouterr().err == "    a\n    b\n"


def test_stdout_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run(["sh", "-c", "printf x; echo err >&2"], stdout=out)
    assert out.read_bytes() == b"x"
    assert proc.stderr == "err\n"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child"
    start = time.monotonic()
    with pytest.raises(Timeout, match="timed out after 0 s"):
        run(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"],
            timeout=0.5, log=tmp_path / "log")
    assert time.monotonic() - start < 5
    child = int(pidfile.read_text())

    def gone() -> bool:
        try:
            return "zombie" in Path(f"/proc/{child}/status").read_text()
        except FileNotFoundError:
            return True
    deadline = time.monotonic() + 5     # SIGKILL is sent; delivery may lag
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone()
    with pytest.raises(Timeout):
        run(["sleep", "30"], timeout=0.3)


def test_watch_stops_the_program() -> None:
    calls = []

    def watch() -> str | None:
        calls.append(1)
        return "enough" if len(calls) > 2 else None

    with pytest.raises(Stopped, match="stopped: enough"):
        run(["sleep", "30"], watch=watch)


def test_tail() -> None:
    assert tail("a\nb\nc\n", 2) == "b\nc"


def test_background_runs_for_the_block_and_is_killed(tmp_path: Path) -> None:
    from nsgen.run import background
    log = tmp_path / "log"
    with background(["sh", "-c", "echo up; exec sleep 30"], log=log) as p:
        while "up" not in log.read_text():
            time.sleep(0.05)
        assert p.poll() is None
    assert p.poll() is not None
    with pytest.raises(ToolError, match="exited early"):
        with background(["true"], log=log) as p:
            p.wait()


def test_ccache_runs_in_depend_mode_with_a_shared_base(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsgen import kbuild
    monkeypatch.delenv("CCACHE_DEPEND", raising=False)
    monkeypatch.delenv("CCACHE_BASEDIR", raising=False)
    env = kbuild.wrapper_env("ccache", tmp_path / "src", tmp_path / "build")
    assert env == {"CCACHE_BASEDIR": str(tmp_path), "CCACHE_DEPEND": "1"}
    assert kbuild.wrapper_env("distcc", tmp_path, tmp_path) == {}
    monkeypatch.setenv("CCACHE_DEPEND", "0")
    assert "CCACHE_DEPEND" not in kbuild.wrapper_env("ccache distcc",
                                                     tmp_path, tmp_path)
    assert kbuild.cc("ccache distcc") == "ccache distcc gcc"
