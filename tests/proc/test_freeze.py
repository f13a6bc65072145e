"""Nothing of a supervised tree acts once the factory stops it, and nothing outlives the
factory (SPEC P-1; issue 8 §4). Real process trees; survivors are checked with psutil."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factory.proc import ProcessFailure, RunSpec, run
from factory.proc.spawn import _LEASH
from tests.proc.helpers import PY, recorded, survivors

ENV = {"PATH": "/usr/bin:/bin"}

# The leader starts a grandchild in a new session that ignores SIGTERM and writes MARK at
# the absolute time AT; the leader ignores SIGTERM too and then waits: until MARK exists
# (LEADER=wait-mark) or forever (LEADER=forever). Every process appends (pid, create time)
# to RECORD.
LATE_WRITER = r"""
import json, os, signal, sys, time
import psutil
RECORD, MARK, AT, LEADER = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
def note():
    with open(RECORD, "a") as fh:
        fh.write(json.dumps([os.getpid(), psutil.Process().create_time()]) + "\n")
signal.signal(signal.SIGTERM, signal.SIG_IGN)
note()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        note()
        while time.time() < AT:
            time.sleep(0.01)
        with open(MARK, "w") as fh:
            fh.write("acted\n")
        os._exit(0)
    os._exit(0)
print("tree-built", flush=True)
if LEADER == "exit":
    sys.exit(0)
while not (LEADER == "wait-mark" and os.path.exists(MARK)):
    time.sleep(0.02)
"""


def _late_writer(tmp: Path, at: float, leader: str, **limits: float) -> RunSpec:
    return RunSpec(
        argv=[PY, "-c", LATE_WRITER, str(tmp / "rec"), str(tmp / "mark"), str(at), leader],
        env=ENV,
        timeout_s=limits.get("timeout_s", 10.0),
        grace_s=limits.get("grace_s", 3.0),
    )


async def test_a_grandchild_never_writes_after_the_deadline(tmp_path: Path) -> None:
    """The issue's example: 2 s deadline, a SIGTERM-ignoring grandchild that would write at
    +2.5 s, 3 s of grace for the leader. The grandchild is frozen at the deadline."""
    t0 = time.time()
    with pytest.raises(ProcessFailure) as info:
        await run(_late_writer(tmp_path, t0 + 2.5, "forever", timeout_s=2.0, grace_s=3.0))
    elapsed = time.time() - t0
    assert info.value.code == "timeout"
    assert not (tmp_path / "mark").exists()
    ids = recorded(tmp_path / "rec")
    assert len(ids) == 2 and survivors(ids) == []
    assert elapsed <= 2.0 + 3.0 + 1.0
    assert info.value.result is not None and info.value.result.sweep.swept >= 1


async def test_without_the_deadline_the_grandchild_does_write(tmp_path: Path) -> None:
    """Negative control: the same tree with time to spare writes its file."""
    res = await run(_late_writer(tmp_path, time.time() + 1.0, "wait-mark", timeout_s=20.0))
    assert res.exit_code == 0 and (tmp_path / "mark").read_text() == "acted\n"


async def test_leftovers_after_a_normal_exit_are_frozen_and_killed_without_grace(
    tmp_path: Path,
) -> None:
    """The leader exits at once; its grandchild would write 1 s later. It is swept before
    run returns, with no grace, and the sweep counts it."""
    t0 = time.time()
    res = await run(_late_writer(tmp_path, t0 + 1.0, "exit", grace_s=5.0))
    assert res.exit_code == 0 and res.stopped is None
    assert res.sweep.swept == 1 and res.sweep.killed
    assert time.time() - t0 < 5.0  # no grace was waited for
    ids = recorded(tmp_path / "rec")
    assert survivors(ids) == []
    time.sleep(max(0.0, t0 + 1.5 - time.time()))
    assert not (tmp_path / "mark").exists()


def test_unsupervised_the_same_leftover_writes(tmp_path: Path) -> None:
    """Negative control: started without the runner, the leftover outlives its leader."""
    spec = _late_writer(tmp_path, time.time() + 0.5, "exit")
    subprocess.run(list(spec.argv), env=dict(spec.env), check=True, capture_output=True)
    deadline = time.time() + 10
    while not (tmp_path / "mark").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "mark").exists()


async def test_a_clean_exit_sweeps_nothing() -> None:
    res = await run(RunSpec(argv=["/bin/true"], env=ENV, timeout_s=10))
    assert res.sweep.swept == 0 and not res.sweep.signalled


# The leader, on SIGTERM, forks a child that writes MARK after 0.2 s, and keeps running.
FORK_IN_GRACE = r"""
import os, signal, sys, time
MARK = sys.argv[1]
def on_term(signum, frame):
    if os.fork() == 0:
        time.sleep(0.2)
        open(MARK, "w").write("acted\n")
        os._exit(0)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
while True:
    time.sleep(0.02)
"""


async def test_children_the_leader_starts_during_its_grace_are_frozen(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    with pytest.raises(ProcessFailure) as info:
        await run(
            RunSpec(argv=[PY, "-c", FORK_IN_GRACE, str(mark)], env=ENV, timeout_s=1.0, grace_s=1.0)
        )
    assert info.value.code == "timeout"
    assert info.value.result is not None and info.value.result.sweep.swept >= 1
    assert not mark.exists()


# ---- the factory itself is SIGKILLed --------------------------------------------------------

# The supervised leader starts a grandchild that leaves the session after the runner's
# scans saw it inside; each writes its pid to PIDS; then both sleep. The supervisor runs
# it under the runner or as a plain Popen.
SUPERVISOR = r"""
import sys, trio
from factory.proc import RunSpec, guard, run
told = guard.watch_process
def watch_process(sid, pid, start):  # readiness: the guard now knows the grandchild
    told(sid, pid, start)
    open(sys.argv[1] + ".told", "a").write(f"{pid}\n")
guard.watch_process = watch_process
CHILD = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    time.sleep(0.3)\n"  # first seen inside the session, then leaves it
    "    os.setsid()\n"
    "    open(sys.argv[1] + '.grandchild', 'w').write(str(os.getpid()))\n"
    "    time.sleep(600)\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(600)\n"
)
async def main():
    argv = [sys.executable, "-c", CHILD, sys.argv[1]]
    if sys.argv[2] == "runner":
        await run(RunSpec(argv=argv, env={}, timeout_s=600, track_interval_s=0.05))
    else:
        import subprocess
        subprocess.Popen(argv, start_new_session=True)
        await trio.sleep(600)
trio.run(main)
"""


def _tree_of_killed_supervisor(tmp_path: Path, how: str) -> list[int]:
    """Start the supervisor, wait for both processes (and for the runner's tree scans to
    have seen them), SIGKILL the supervisor; the pids of leader and grandchild."""
    pid_file = tmp_path / f"child-{how}"
    files = [pid_file, pid_file.with_name(pid_file.name + ".grandchild")]
    sup = subprocess.Popen([PY, "-c", SUPERVISOR, str(pid_file), how], cwd=_ROOT)
    try:
        deadline = time.time() + 30
        while not all(f.exists() and f.read_text() for f in files) and time.time() < deadline:
            time.sleep(0.02)
        pids = [int(f.read_text()) for f in files]
        if how == "runner":  # wait until the guard was told of the escaped grandchild
            told = pid_file.with_name(pid_file.name + ".told")
            while str(pids[1]) not in (told.read_text() if told.exists() else ""):
                assert time.time() < deadline
                time.sleep(0.02)
    finally:
        sup.kill()
        sup.wait()
    return pids


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in (b"Z", b"X"):
            return True  # dead; only waiting for its new parent to reap it
        time.sleep(0.02)
    return False


_ROOT = Path(__file__).resolve().parents[2]


def test_the_whole_tree_dies_with_a_sigkilled_factory(tmp_path: Path) -> None:
    """The leader by its parent-death signal, the grandchild in its own session by the
    guard, once the factory is SIGKILLed."""
    leader, grandchild = _tree_of_killed_supervisor(tmp_path, "runner")
    assert _gone_within(leader, 5.0)
    assert _gone_within(grandchild, 5.0)


def test_an_unsupervised_tree_outlives_a_sigkilled_parent(tmp_path: Path) -> None:
    """Negative control: a plain Popen tree of the same supervisor survives it."""
    pids = _tree_of_killed_supervisor(tmp_path, "popen")
    try:
        assert not any(_gone_within(pid, 1.0) for pid in pids)
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _leash(parent: int, *argv: str) -> int:
    r, w = os.pipe()
    try:
        cmd = [sys.executable, "-I", "-S", "-c", _LEASH, str(w), str(parent), argv[0], *argv]
        return subprocess.run(cmd, pass_fds=(w,), check=False).returncode
    finally:
        os.close(r)
        os.close(w)


def test_the_leash_runs_nothing_when_its_parent_is_already_gone(tmp_path: Path) -> None:
    """Re-checked after arming the death signal: a parent other than the expected one
    (the factory died between fork and prctl) means exit 137 before the program runs."""
    mark = tmp_path / "ran"
    assert _leash(1, "/usr/bin/touch", str(mark)) == 137
    assert not mark.exists()
    # Twin: with the true parent's pid the program runs.
    assert _leash(os.getpid(), "/usr/bin/touch", str(mark)) == 0
    assert mark.exists()


def test_env_is_exact_even_when_empty() -> None:
    out = subprocess.run(
        [
            PY,
            "-c",
            "import trio, json\n"
            "from factory.proc import RunSpec, run\n"
            "r = trio.run(run, RunSpec(argv=['/usr/bin/env'], env={}, timeout_s=10))\n"
            "print(json.dumps(r.stdout.decode()))\n",
        ],
        cwd=_ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
    )
    assert json.loads(out.stdout) == ""
