"""The coordinating machine's side: submit a batch as one workflow, wait for it, and count
a task only once its bundle is fetched and its receipt verifies here.

The workflow id is derived from the batch id, so running the same batch command again
attaches to the workflow already running (or finished) instead of starting the tasks
again: Temporal's history is the durable record of what was scheduled, and what each task
counts for is decided again, here, from git.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.distributed.bridge import SdkLoop
from factory.distributed.fetched import Checked, check_bundle
from factory.distributed.payloads import (
    PAYLOAD_LIMIT,
    RemoteBatch,
    RemoteResult,
    check_task,
    payload_size,
)
from factory.distributed.workflow import WORKFLOW_NAME
from factory.errors import Failure, Refused

POLL_S = 1.0
QUERY_S = 5.0  # how long one progress query may wait for a worker to answer it
RETRY_S = 1.0
OUTAGE_S = 300.0  # how long the coordinator waits for a server that went away
Progress = Callable[[dict[str, str]], None]
Notice = Callable[[str], None]  # a line for the person waiting (from the SDK's thread)

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    Handle = WorkflowHandle[Any, list[RemoteResult]]


class BatchRefused(Refused):
    """A distributed batch that cannot be submitted as given (nothing was submitted)."""


class EngineFailure(Failure):
    """The distributed engine could not be used (exit 4)."""


TEMPORAL_UNREACHABLE = EngineFailure.define(
    "temporal-unreachable", "check that the Temporal server runs at that address, then rerun"
)
BATCH_PAYLOAD = BatchRefused.define(
    "batch-payload-invalid", "fix the tasks named in the message; nothing was submitted"
)


@dataclass(frozen=True, slots=True)
class Counted:
    """One task as the coordinator counts it: the worker's claim and what git showed."""

    claim: RemoteResult
    checked: Checked | None

    @property
    def outcome(self) -> str:
        """``failed`` unless the receipt verified here; then the receipt's own status."""
        if self.checked is None or not self.checked.ok or self.checked.outcome is None:
            return "failed"
        return self.checked.outcome

    @property
    def reason(self) -> str | None:
        if self.checked is None:
            return self.claim.error or "the worker pushed no bundle"
        return self.checked.reason


def workflow_id(batch: RemoteBatch) -> str:
    """The batch id and a digest of exactly what is submitted: the same submission attaches
    to its workflow (running or finished), a different one never does."""
    data = json.dumps(asdict(batch), sort_keys=True, ensure_ascii=False).encode("utf-8")
    return f"factory-batch-{batch.batch_id}-{hashlib.sha256(data).hexdigest()[:16]}"


def check_batch(batch: RemoteBatch) -> None:
    """Refuse a batch Temporal would refuse, or that breaks a payload rule."""
    problems = [f"{t.task_id}: {p}" for t in batch.tasks for p in check_task(t)]
    ids = [t.task_id for t in batch.tasks]
    if len(set(ids)) != len(ids):
        problems.append("two tasks share an id")
    if payload_size(batch) > PAYLOAD_LIMIT:
        problems.append("the batch is over Temporal's 2 MB payload cap (task texts too long)")
    if problems:
        raise BATCH_PAYLOAD("; ".join(problems[:5]))


async def _start(client: Client, queue: str, batch: RemoteBatch) -> Handle:
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    wid = workflow_id(batch)
    try:
        return await client.start_workflow(
            WORKFLOW_NAME,
            batch,
            id=wid,
            task_queue=queue,
            result_type=list[RemoteResult],
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:  # it ran to its end before: take its result
        return client.get_workflow_handle(wid, result_type=list[RemoteResult])


async def _wait(
    handle: Handle,
    progress: Progress | None,
    stop: asyncio.Event,
    check: Callable[[], Awaitable[None]] | None = None,
) -> list[RemoteResult]:
    result = asyncio.ensure_future(handle.result())
    try:
        while not result.done():
            if check is not None:
                with contextlib.suppress(Exception):  # a hint: never fails the wait
                    await check()
            waited = asyncio.ensure_future(stop.wait())
            await asyncio.wait(
                {result, waited}, timeout=POLL_S, return_when=asyncio.FIRST_COMPLETED
            )
            waited.cancel()
            if stop.is_set():
                raise asyncio.CancelledError
            if progress is not None and not result.done():
                with contextlib.suppress(Exception):  # progress is best effort
                    # Bounded: a query waits for a worker, and there may be none yet.
                    query = handle.query("factory.done", result_type=dict[str, str])
                    progress(await asyncio.wait_for(query, QUERY_S))
        return list(result.result())
    finally:
        result.cancel()


def _queue_check(
    client: Client, address: str, queue: str, batch: RemoteBatch, notice: Notice
) -> Callable[[], Awaitable[None]]:
    """The check :func:`_wait` makes while it waits: queues no worker polls are named."""
    from factory.distributed.pollers import CHECK_EVERY_S, IdleWatch, message, unserved

    watch, loop = IdleWatch(), asyncio.get_running_loop()
    queues = {queue, *(t.task_queue for t in batch.tasks)}
    last = [float("-inf")]

    async def check() -> None:
        if loop.time() - last[0] < CHECK_EVERY_S:
            return
        last[0] = loop.time()
        idle = await unserved(client, queue, (t.task_queue for t in batch.tasks))
        for name in watch.seen(idle, queues - idle, loop.time()):
            notice(message(name, address))

    return check


async def _submit_and_wait(
    address: str,
    queue: str,
    batch: RemoteBatch,
    progress: Progress | None,
    stop: asyncio.Event,
    notice: Notice | None = None,
) -> list[RemoteResult]:
    """Start or attach, then wait; a server that goes away is waited for (it keeps its
    state) up to :data:`OUTAGE_S`, then ``temporal-unreachable``."""
    from temporalio.client import Client
    from temporalio.service import RPCError

    try:
        client = await Client.connect(address)
        handle = await _start(client, queue, batch)
    except (RPCError, RuntimeError) as exc:
        raise TEMPORAL_UNREACHABLE(f"{address}: {exc}") from None
    down_since: float | None = None
    loop = asyncio.get_running_loop()
    while True:
        try:
            check = None if notice is None else _queue_check(client, address, queue, batch, notice)
            return await _wait(handle, progress, stop, check)
        except RPCError as exc:
            now = loop.time()
            down_since = now if down_since is None else down_since
            if now - down_since > OUTAGE_S:
                raise TEMPORAL_UNREACHABLE(f"{address} did not come back: {exc}") from None
            await asyncio.sleep(RETRY_S)


async def run_remote(
    address: str,
    queue: str,
    batch: RemoteBatch,
    *,
    out: Path,
    progress: Progress | None = None,
    notice: Notice | None = None,
) -> list[Counted]:
    """Submit (or attach to) ``batch`` and count each task from its fetched bundle.

    Cancelling this only stops waiting: the workflow goes on in Temporal, and the same
    call later attaches to it.
    """
    import trio

    check_batch(batch)
    loop: SdkLoop[list[RemoteResult]] = SdkLoop(
        lambda stop: _submit_and_wait(address, queue, batch, progress, stop, notice)
    )
    claims = await loop.run()
    remote = {t.task_id: t.remote for t in batch.tasks}
    return [
        await trio.to_thread.run_sync(_count, claim, remote[claim.task_id], out) for claim in claims
    ]


def _count(claim: RemoteResult, url: str, out: Path) -> Counted:
    if claim.ref is None:
        return Counted(claim, None)
    rev = (claim.revision or "none").split(":")[-1][:16]
    dest = out / "tasks" / claim.task_id / f"attempt-{claim.attempt}-{rev}"
    if dest.exists():  # counted before (a resumed batch): verify what is there again
        from factory.agent.verify import verify

        receipt = dest / "receipt.json"
        report = verify(receipt)
        status = report.status if report.ok else None
        why = None if report.ok else "the receipt fetched earlier does not verify"
        return Counted(claim, Checked(report.ok, receipt, claim.revision, status, why))
    return Counted(
        claim, check_bundle(out / "remote-cache.git", url, claim.ref, claim.revision, dest)
    )


def summary(counted: Sequence[Counted]) -> dict[str, int]:
    """How many tasks ended how, as counted here."""
    tally: dict[str, int] = {}
    for item in counted:
        tally[item.outcome] = tally.get(item.outcome, 0) + 1
    return tally
