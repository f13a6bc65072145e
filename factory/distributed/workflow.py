"""The batch workflow: one activity per task, on the task's queue, retried elsewhere when a
worker stops heartbeating.

Workflow code is replayed by Temporal and must be deterministic: it only schedules
activities and collects their results. A task whose activity fails every attempt comes back
as a ``failed`` result naming the last error, so one task never fails the batch.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from factory.distributed.payloads import RemoteBatch, RemoteResult, RemoteTask

WORKFLOW_NAME = "factory.batch"
RUN_TASK = "factory.run-task"
NOT_RETRIED = ["factory.refused"]  # a task that is refused is refused again elsewhere


@workflow.defn(name=WORKFLOW_NAME)
class BatchWorkflow:
    """Runs every task of a :class:`RemoteBatch` at once; each worker's own slot count
    caps how many run on it."""

    def __init__(self) -> None:
        self._done: dict[str, str] = {}

    @workflow.run
    async def run(self, batch: RemoteBatch) -> list[RemoteResult]:
        runs = [self._one(batch, task) for task in batch.tasks]
        return list(await asyncio.gather(*runs))

    @workflow.query(name="factory.done")
    def done(self) -> dict[str, str]:
        """The outcome each finished task reported so far (a claim, not yet verified)."""
        return dict(self._done)

    async def _one(self, batch: RemoteBatch, task: RemoteTask) -> RemoteResult:
        policy = RetryPolicy(
            initial_interval=timedelta(seconds=1),
            maximum_interval=timedelta(seconds=10),
            maximum_attempts=batch.max_attempts,
            non_retryable_error_types=NOT_RETRIED,
        )
        try:
            result: RemoteResult = await workflow.execute_activity(
                RUN_TASK,
                task,
                task_queue=task.task_queue,
                result_type=RemoteResult,
                start_to_close_timeout=timedelta(seconds=batch.task_timeout_s),
                heartbeat_timeout=timedelta(seconds=batch.heartbeat_timeout_s),
                retry_policy=policy,
                activity_id=task.task_id,
            )
        except ActivityError as exc:
            cause = exc.cause if exc.cause is not None else exc
            result = RemoteResult(
                task_id=task.task_id, outcome="failed", error=f"worker: {cause}"[:500]
            )
        self._done[task.task_id] = result.outcome
        return result
