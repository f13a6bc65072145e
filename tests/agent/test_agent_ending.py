"""``factory agent`` at a terminal ends like the demo (issue 22): outcome, verdicts, whether
the receipt verified, where the receipt and the worktree are, and next commands that work
as typed — each one is run here exactly as printed. ``--json`` and a non-terminal stdout
keep the receipt's JSON as the only stdout.

stdout is a real pseudo-terminal; the providers are in-process fakes (a test emulation,
``tests/agent/fake_factory.py``)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.agent.creating_helpers import FAKE
from tests.support.git import git, init_repo

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj", {"src/app.py": "def add(a, b):\n    return a - b\n"})


def _at_terminal(scenario: str, args: list[str], cwd: Path) -> tuple[int, str, bytes]:
    """Run the CLI with stdout on a pty (stderr a pipe); the screen's text, ANSI removed."""
    import pty

    main_fd, tty_fd = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), scenario, "--", *args],
        stdout=tty_fd,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    os.close(tty_fd)
    _, err = proc.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(main_fd)
    screen = ANSI.sub(b"", b"".join(chunks)).replace(b"\r\n", b"\n").decode()
    return proc.returncode, screen, err


def _args(repo: Path, *extra: str, out: str = "r.json") -> list[str]:
    return ["agent", "--repo", str(repo), "--task", "fix add()", "--out", out,
            "--timeout-ms", "5000", *extra]  # fmt: skip


def _commands(screen: str) -> dict[str, str]:
    lines = screen.splitlines()
    return {
        lines[i].strip().removeprefix("# "): lines[i + 1].strip()
        for i in range(len(lines) - 1)
        if lines[i].strip().startswith("# ")
    }


def test_an_approved_run_ends_on_the_outcome_and_commands_that_work(
    tmp_path: Path, repo: Path
) -> None:
    code, screen, err = _at_terminal("approve", _args(repo), tmp_path)
    assert code == 0, err
    assert not screen.lstrip().startswith("{")  # no JSON at a terminal
    receipt = json.loads((tmp_path / "r.json").read_bytes())
    for expected in (
        "outcome    completed (exit 0)",
        "verdicts   worker ok → review APPROVE",
        "verified   yes: revision, canonical bytes",
        "change     uncommitted in the worktree",
        "receipt    r.json",
        f"(branch {receipt['worktree_creation']['branch']})",
    ):
        assert expected in screen, screen
    commands = _commands(screen)
    assert set(commands) == {
        "read it",
        "take the change",
        "remove the worktree",
        "open a pull request",
    }
    assert commands["take the change"].endswith("receipt apply r.json --to proj")

    # Each works as typed, from where the user stands.
    def typed(what: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            shlex.split(commands[what]), cwd=tmp_path, capture_output=True, timeout=120
        )

    assert typed("read it").returncode == 0
    assert typed("open a pull request").returncode == 0
    done = typed("take the change")
    assert done.returncode == 0, done.stderr
    assert git(repo, "diff", "--cached", "--name-only").split() == ["src/app.py"]
    done = typed("remove the worktree")
    assert done.returncode == 0, done.stderr
    assert not Path(receipt["worktree_creation"]["path"]).exists()


def test_a_failed_run_offers_no_apply(tmp_path: Path, repo: Path) -> None:
    code, screen, _ = _at_terminal("fail", _args(repo), tmp_path)
    assert code == 4
    assert "outcome    failed (exit 4)" in screen and "error      no-candidate-change" in screen
    assert set(_commands(screen)) == {"read it", "remove the worktree"}


def test_json_at_a_terminal_and_a_pipe_keep_the_receipt_only(tmp_path: Path, repo: Path) -> None:
    code, screen, _ = _at_terminal("approve", _args(repo, "--json"), tmp_path)
    assert code == 0
    assert screen.strip() == (tmp_path / "r.json").read_text().strip()
    piped = subprocess.run(
        [sys.executable, str(FAKE), "approve", "--", *_args(repo, out="r2.json")],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert piped.returncode == 0
    assert piped.stdout == (tmp_path / "r2.json").read_bytes()
