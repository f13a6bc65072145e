"""Escape attempts against the runner (SPEC P-1), found by the issue-4 review.

Survivors are found independently of the runner: every child gets a unique ``QA_TAG`` in
its environment and psutil looks for it afterwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
import trio

from factory.proc import ProcessFailure, RunSpec, run
from tests.proc.helpers import PY, recorded, survivors
from tests.support.proc_tree import FORK_CHAIN, tagged

ROOT = Path(__file__).resolve().parents[2]


def _spec(code: str, tag: str, timeout_s: float = 10.0) -> RunSpec:
    return RunSpec(
        argv=[PY, "-c", code],
        env={"PATH": "/usr/bin:/bin", "QA_TAG": tag},
        timeout_s=timeout_s,
        grace_s=0.3,
    )


# The leader exits at once; its grandchild starts a new session only later, after the
# intermediate parent is gone (so no periodic scan ever saw it as the leader's).
LATE_ESCAPE = r"""
import os, time
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(0.2)
        os.setsid()
        if os.fork() == 0:
            os.setsid()
            while True:
                time.sleep(0.05)
        os._exit(0)
    os._exit(0)
os._exit(0)
"""


async def test_fork_chain_in_new_sessions_is_caught() -> None:
    tag = uuid.uuid4().hex
    res = await run(_spec(FORK_CHAIN, tag))
    assert res.exit_code == 0 and res.sweep.killed
    assert tagged(tag) == []


async def test_late_setsid_after_the_leader_exited_is_caught() -> None:
    tag = uuid.uuid4().hex
    res = await run(_spec(LATE_ESCAPE, tag))
    assert res.exit_code == 0 and res.sweep.signalled
    assert tagged(tag) == []


# Ctrl-C delivered in the synchronous code between the spawn and the supervised wait
# (here: from inside the runner's first /proc read). Argument: "ctrl-c" or "none".
KI_AFTER_SPAWN = r"""
import os, signal, sys, trio
import factory.proc.runner as runner
from factory.proc import RunSpec, run
real = runner.read_stat
def read_stat(pid):
    if sys.argv[1] == "ctrl-c":
        signal.raise_signal(signal.SIGINT)
    return real(pid)
runner.read_stat = read_stat
async def main():
    res = await run(RunSpec(argv=["sleep", sys.argv[2]], env={"PATH": "/usr/bin:/bin",
                            "QA_TAG": sys.argv[3]}, timeout_s=20, grace_s=0.2))
    print("exit", res.exit_code, flush=True)
try:
    trio.run(main)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize(
    ("mode", "sleep", "rc", "out"),
    [
        ("ctrl-c", "30", 130, b"interrupted\n"),
        ("none", "0", 0, b"exit 0\n"),  # negative control: the same path without Ctrl-C
    ],
)
def test_ctrl_c_right_after_spawn_still_sweeps(mode: str, sleep: str, rc: int, out: bytes) -> None:
    tag = uuid.uuid4().hex
    done = subprocess.run(
        [sys.executable, "-c", KI_AFTER_SPAWN, mode, sleep, tag],
        capture_output=True,
        cwd=ROOT,
        timeout=20,
        check=False,
    )
    assert (done.returncode, done.stdout) == (rc, out), done.stderr
    assert tagged(tag) == []


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"timeout_s": float("nan")}, "timeout_s"),
        ({"timeout_s": float("inf")}, "timeout_s"),
        ({"timeout_s": 0.0}, "timeout_s"),
        ({"grace_s": -1.0}, "grace_s"),
        ({"stdout_cap": -1}, "stdout_cap"),
        ({"argv": ["echo", "a\0b"]}, "null byte"),
        ({"env": {"A=B": "x"}}, "environment variable name"),
        ({"cwd": Path("/nonexistent-qa4")}, "/nonexistent-qa4"),
    ],
)
async def test_bad_specs_are_typed_launch_failures(changes: dict[str, object], needle: str) -> None:
    base = RunSpec(argv=["echo", "hi"], env={"PATH": "/usr/bin:/bin"}, timeout_s=5.0)
    spec = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
    with pytest.raises(ProcessFailure) as info:
        await run(spec)
    assert info.value.code == "launch-failed" and needle in info.value.message


async def test_good_spec_twin_runs() -> None:
    res = await run(
        RunSpec(
            argv=["echo", "hi"],
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=5.0,
            grace_s=0.0,
            stdout_cap=3,
        )
    )
    assert res.exit_code == 0 and res.stdout == b"hi\n"


# The process's main thread exits (pthread_exit) while another thread keeps running: its
# /proc/<pid>/stat says "Z", yet it is alive. Argument 1: record file; 2: "leader" (the
# leader itself does it) or "grandchild" (a child in a new session does, the leader exits).
ZOMBIE_MAIN_THREAD = r"""
import ctypes, json, os, signal, sys, threading, time
import psutil
def become_headless():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(sys.argv[1], "a") as fh:
        fh.write(json.dumps([os.getpid(), psutil.Process().create_time()]) + "\n")
    threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)]).start()
    ctypes.CDLL(None).pthread_exit(None)
if sys.argv[2] == "leader":
    become_headless()
if os.fork() == 0:
    os.setsid()
    become_headless()
time.sleep(0.3)
"""


async def test_headless_grandchild_is_killed_not_taken_for_a_zombie(tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    res = await run(
        RunSpec(
            argv=[PY, "-c", ZOMBIE_MAIN_THREAD, str(rec), "grandchild"],
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=10,
            grace_s=0.2,
        )
    )
    ids = recorded(rec)
    left = survivors(ids)
    _kill(left)
    assert len(ids) == 1 and left == []
    assert res.exit_code == 0 and res.sweep.killed and res.sweep.survivors == ()


async def test_headless_leader_is_killed_at_the_deadline(tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    with pytest.raises(ProcessFailure) as info:
        await run(
            RunSpec(
                argv=[PY, "-c", ZOMBIE_MAIN_THREAD, str(rec), "leader"],
                env={"PATH": "/usr/bin:/bin"},
                timeout_s=0.5,
                grace_s=0.2,
            )
        )
    ids = recorded(rec)
    left = survivors(ids)
    _kill(left)
    assert len(ids) == 1 and left == []
    assert info.value.code == "timeout"
    assert info.value.result is not None and info.value.result.sweep.killed


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# Fifty orphans in new sessions that exit at once: each re-parents to the factory (the
# subreaper) as a zombie. Then the leader marks that it is done and waits.
ORPHANS = r"""
import os, sys, time
for _ in range(50):
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
        os._exit(0)
    os.wait()
open(sys.argv[1], "w").close()
time.sleep(3)
"""


def _our_zombies() -> int:
    me = os.getpid()
    count = 0
    for proc in psutil.process_iter(["ppid", "status"]):
        if proc.info["ppid"] == me and proc.info["status"] == psutil.STATUS_ZOMBIE:
            count += 1
    return count


async def _zombies_while_running(tmp_path: Path, track_interval_s: float) -> int:
    """Zombie children of ours that appeared while this tree ran (earlier tests of the
    same process may have left their own, which no tree of this run claims)."""
    before = _our_zombies()
    marker = tmp_path / "made"
    spec = RunSpec(
        argv=[PY, "-c", ORPHANS, str(marker)],
        env={"PATH": "/usr/bin:/bin"},
        timeout_s=60,
        grace_s=0.1,
        track_interval_s=track_interval_s,
    )
    seen: list[int] = []

    async def sample() -> None:
        while not marker.exists():
            await trio.sleep(0.05)
        await trio.sleep(1.5)  # several tracking scans (0.25 s) under any load
        seen.append(_our_zombies() - before)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sample)
        res = await run(spec)
    assert res.sweep.survivors == ()
    return seen[0]


async def test_orphans_that_exit_during_the_run_are_reaped_as_they_go(tmp_path: Path) -> None:
    """A tree that keeps forking cannot fill the process table with its zombies (and slow
    every scan of the machine) until its teardown: the tracking scan reaps them."""
    assert await _zombies_while_running(tmp_path, 0.25) < 10


async def test_twin_without_tracking_scans_the_zombies_pile_up(tmp_path: Path) -> None:
    assert await _zombies_while_running(tmp_path, 30.0) >= 40
