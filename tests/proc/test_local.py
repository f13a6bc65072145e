"""The one short-command wrapper (factory.proc.local; SPEC P-1): argv only, allow-listed
environment, bounded output, a deadline, stderr kept."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from factory.proc.local import (
    COMMAND_NOT_FOUND,
    COMMAND_OUTPUT_LIMIT,
    COMMAND_TIMEOUT,
    CommandFailure,
    local_env,
    run_local,
)

PY = sys.executable


def test_exit_status_stdout_and_stderr_are_returned(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('out'); sys.stderr.write('err'); sys.exit(3)"
    done = run_local([PY, "-c", code], cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (3, b"out", b"err")
    assert done.argv == (PY, "-c", code)


def test_the_environment_is_the_allow_list_plus_what_the_call_site_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "secret")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    code = "import os, json; print(json.dumps(sorted(os.environ)))"
    done = run_local([PY, "-c", code], cwd=tmp_path, env_extra={"LC_ALL": "C"})
    names = set(done.stdout.decode().strip().strip("[]").replace('"', "").split(", "))
    assert "GIT_DIR" not in names and "ANTHROPIC_API_KEY" not in names
    assert {"PATH", "XDG_CONFIG_HOME", "LC_ALL"} <= names
    # twin: the same names come out of local_env for any source
    env = local_env({"X": "1"}, environ={"HOME": "/h", "GIT_DIR": "/g", "OPENAI_API_KEY": "k"})
    assert env == {"HOME": "/h", "PATH": env["PATH"], "X": "1"}


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    done = run_local([PY, "-c", "import sys; print(repr(sys.stdin.read()))"], cwd=tmp_path)
    assert done.stdout.strip() == b"''"


def test_a_missing_program_is_a_typed_failure(tmp_path: Path) -> None:
    with pytest.raises(CommandFailure) as caught:
        run_local([str(tmp_path / "no-such-program")], cwd=tmp_path)
    assert caught.value.spec is COMMAND_NOT_FOUND and caught.value.exit_code == 4


def test_output_past_the_cap_stops_the_command(tmp_path: Path) -> None:
    loop = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    with pytest.raises(CommandFailure) as caught:
        run_local([PY, "-c", loop], cwd=tmp_path, stdout_cap=1 << 20, timeout_s=60)
    assert caught.value.spec is COMMAND_OUTPUT_LIMIT
    assert "1048576 bytes on stdout" in caught.value.fact
    # twin: exactly the cap is fine
    exact = run_local([PY, "-c", "print('x' * 99)"], cwd=tmp_path, stdout_cap=100)
    assert exact.stdout == b"x" * 99 + b"\n"


def test_the_deadline_kills_a_stuck_command(tmp_path: Path) -> None:
    with pytest.raises(CommandFailure) as caught:
        run_local([PY, "-c", "import time; time.sleep(60)"], cwd=tmp_path, timeout_s=0.5)
    assert caught.value.spec is COMMAND_TIMEOUT
    assert "did not finish in 0.5 s" in caught.value.fact


@pytest.mark.parametrize("argv", [[], [b"git"], "git status"])
def test_argv_must_be_a_list_of_strings(tmp_path: Path, argv: object) -> None:
    with pytest.raises(TypeError):
        run_local(argv, cwd=tmp_path)  # type: ignore[arg-type]


def test_stdin_bytes_reach_the_child_even_past_a_pipe_buffer(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: more than a pipe holds, so it is fed in turns
    code = "import sys, hashlib; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"
    done = run_local([PY, "-c", code], cwd=tmp_path, stdin=data)
    import hashlib

    assert done.stdout.strip().decode() == hashlib.sha256(data).hexdigest()
    # twin: a child that does not read its input still ends normally
    quiet = run_local([PY, "-c", "pass"], cwd=tmp_path, stdin=data)
    assert quiet.returncode == 0
