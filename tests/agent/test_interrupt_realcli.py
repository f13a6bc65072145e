"""SIGINT to ``factory agent`` while a real pinned CLI's grandchild runs (rehearsal route):
terminal ``interrupted`` receipt, exit 130, and no process of the run survives (SPEC A-2,
P-1). The fake-profile twin is ``test_cli.py::test_sigint_during_the_worker``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.agent.scenarios import scenario
from tests.support.git import git
from tests.support.layout import Layout

pytestmark = pytest.mark.realcli


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def interrupt_when(layout: Layout, scenario_path: Path, marker: str) -> tuple[int, list[str]]:
    """Start the run, wait until a descendant's argv contains ``marker``, send SIGINT;
    return the exit code and the argv of every descendant still alive afterwards."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "factory",
            "agent",
            "--worktree",
            str(layout.wt),
            "--task",
            "t",
            "--out",
            str(layout.receipt),
            "--progress",
            "jsonl",
            "--rehearsal",
            str(scenario_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    me = psutil.Process(proc.pid)
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + 60
    while not any(marker in _cmdline(p) for p in seen.values()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        for child in me.children(recursive=True):
            seen.setdefault(child.pid, child)
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert out == layout.receipt.read_bytes(), err[-2000:]
    survivors = []
    for p in seen.values():  # psutil.Process compares create times: a reused pid is not ours
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                survivors.append(_cmdline(p))
        except psutil.NoSuchProcess:
            pass
    return proc.returncode, survivors


def test_sigint_while_the_real_worker_runs_a_grandchild(layout: Layout, tmp_path: Path) -> None:
    # The worker's allow-listed 'git status' runs the repository's fsmonitor hook: a
    # grandchild of Claude Code that would outlive a careless kill.
    git(layout.repo, "config", "core.fsmonitor", "sleep 59")
    path = scenario(
        tmp_path,
        {
            "role": "worker",
            "tool_calls": [
                {"tool": "Write", "file_path": "b.txt", "content": "b\n"},
                {"tool": "Bash", "command": "git status --short"},
            ],
            "final_message": "done",
        },
        {"role": "reviewer", "final_message": '{"verdict":"APPROVE","summary":"ok"}'},
    )
    rc, survivors = interrupt_when(layout, path, "sleep 59")
    r = json.loads(layout.receipt.read_bytes())
    assert (rc, r["status"], r["exit_code"]) == (130, "interrupted", 130)
    assert [(p["phase"], p["outcome"]) for p in r["phases"]] == [("worker", "interrupted")]
    assert survivors == []


def test_sigint_while_the_real_reviewer_runs_a_command(layout: Layout, tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        {
            "role": "worker",
            "tool_calls": [{"tool": "Write", "file_path": "b.txt", "content": "b\n"}],
            "final_message": "done",
        },
        {
            "role": "reviewer",
            "tool_calls": [{"tool": "shell", "command": "sleep 58"}],
            "final_message": '{"verdict":"APPROVE","summary":"ok"}',
        },
    )
    rc, survivors = interrupt_when(layout, path, "sleep 58")
    r = json.loads(layout.receipt.read_bytes())
    assert (rc, r["status"], r["exit_code"]) == (130, "interrupted", 130)
    assert [p["outcome"] for p in r["phases"]] == ["ok", "interrupted"]
    assert survivors == []
    assert not list(layout.out.glob("factory-rehearsal-*"))  # the route's config root is gone
