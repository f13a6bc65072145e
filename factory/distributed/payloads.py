"""What travels through Temporal: task ids, commit ids, refs, digests and outcomes.

Plain frozen dataclasses of strings and numbers (Temporal's default converter encodes
them as JSON), importable inside the workflow sandbox: standard library only. Task text is
the one free-form field; the whole input is held under :data:`PAYLOAD_LIMIT` before it is
sent (Temporal refuses payloads over 2 MB).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Literal

PAYLOAD_LIMIT = 2 * 1024 * 1024  # Temporal's own cap on one payload
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
QUEUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

Outcome = Literal["completed", "rejected", "failed", "interrupted"]


@dataclass(frozen=True)
class RemoteTask:
    """One task as a worker receives it: where the repository is, which commit to start
    from, what to do, and on which task queue (the workers holding the right login)."""

    task_id: str
    task: str
    remote: str
    base_commit: str
    task_queue: str
    scenario: str | None = None  # the rehearsal scenario's JSON text; None: the model CLIs
    test_argv: tuple[str, ...] = ()
    timeout_ms: int = 600_000


@dataclass(frozen=True)
class RemoteBatch:
    """A whole batch, submitted as one workflow."""

    batch_id: str
    tasks: tuple[RemoteTask, ...]
    task_timeout_s: int = 3600
    heartbeat_timeout_s: int = 30
    max_attempts: int = 3


@dataclass(frozen=True)
class RemoteResult:
    """What a worker reports for one task: the bundle's ref and the receipt revision it
    claims. A claim only: the coordinator fetches the ref and verifies before counting."""

    task_id: str
    outcome: Outcome
    ref: str | None = None
    bundle: str | None = None  # the bundle commit the ref names
    revision: str | None = None
    worker: str = ""
    attempt: int = 1
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def payload_size(value: RemoteBatch | RemoteTask | RemoteResult) -> int:
    """The size of ``value`` as JSON, close to what the default converter sends."""
    return len(json.dumps(asdict(value), ensure_ascii=False).encode("utf-8"))


def check_task(task: RemoteTask) -> list[str]:
    """What is wrong with ``task`` as a payload (empty when nothing is)."""
    problems = []
    if not TASK_ID.fullmatch(task.task_id):
        problems.append(f"task id {task.task_id!r} is not 1-64 of [A-Za-z0-9._-]")
    if not QUEUE.fullmatch(task.task_queue):
        problems.append(f"task queue {task.task_queue!r} is not 1-128 of [A-Za-z0-9._-]")
    if not COMMIT.fullmatch(task.base_commit):
        problems.append("the base is not a full commit id")
    if not task.task.strip():
        problems.append("the task text is empty")
    return problems
