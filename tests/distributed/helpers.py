"""A shared remote (a bare repository) and batches of rehearsal tasks for the distributed
engine's tests. The rehearsal route stands in for the model: the real pinned CLIs against
factory's scripted loopback model."""

from __future__ import annotations

from pathlib import Path

from factory.distributed.payloads import RemoteBatch, RemoteTask
from factory.rehearsal.scenarios import __file__ as _scenarios
from tests.support.git import git, init_repo

DEMO_SCENARIO = (Path(_scenarios).parent / "demo.json").read_text(encoding="utf-8")


def shared_remote(tmp: Path) -> tuple[str, str]:
    """A bare repository with one commit: its path (the remote's URL) and that commit."""
    src = init_repo(tmp / "src", {"calc.py": "def add(a, b):\n    return a - b\n"})
    bare = tmp / "remote.git"
    git(tmp, "clone", "-q", "--bare", str(src), str(bare))
    return str(bare), git(src, "rev-parse", "HEAD").strip()


def rehearsal_batch(
    batch_id: str,
    remote: str,
    base: str,
    count: int,
    *,
    queues: tuple[str, ...] = ("factory",),
    heartbeat_s: int = 5,
) -> RemoteBatch:
    tasks = tuple(
        RemoteTask(
            task_id=f"task-{i}",
            task=f"add greet() (task {i})",
            remote=remote,
            base_commit=base,
            task_queue=queues[i % len(queues)],
            scenario=DEMO_SCENARIO,
            timeout_ms=120_000,
        )
        for i in range(count)
    )
    return RemoteBatch(batch_id=batch_id, tasks=tasks, heartbeat_timeout_s=heartbeat_s)


def run_refs(remote: str) -> dict[str, list[str]]:
    """The run refs at the remote, by task id."""
    out = git(Path(remote), "for-each-ref", "--format=%(refname)", "refs/factory/runs")
    refs: dict[str, list[str]] = {}
    for ref in out.split():
        refs.setdefault(ref.split("/")[3], []).append(ref)
    return refs
