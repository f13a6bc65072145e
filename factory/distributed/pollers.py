"""Whether any worker serves the batch's task queues, so a batch waiting on a queue no
``factory worker`` polls says so instead of waiting in silence.

Temporal lists a queue's recent pollers (``DescribeTaskQueue``). The coordinator asks for
every queue the batch uses — the workflow's, and each task's — while it waits, and
:class:`IdleWatch` decides, as a pure function of the answers and the clock, which queues
to name: one that has had no poller for :data:`GRACE_S`, once, and again only after a
worker came and went. The server lists a poller for a while after it was last seen, so a
worker that just died is not noticed at once: a hint, never a verdict.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from temporalio.client import Client

GRACE_S = 10.0  # a queue is named after this long without a poller
CHECK_EVERY_S = 5.0


@dataclass
class IdleWatch:
    """Which queues to name now, from each check's set of queues with no poller."""

    grace_s: float = GRACE_S
    idle_since: dict[str, float] = field(default_factory=dict)
    named: set[str] = field(default_factory=set)

    def seen(self, idle: Iterable[str], served: Iterable[str], now: float) -> list[str]:
        for queue in served:
            self.idle_since.pop(queue, None)
            self.named.discard(queue)
        due = []
        for queue in sorted(set(idle)):
            since = self.idle_since.setdefault(queue, now)
            if now - since >= self.grace_s and queue not in self.named:
                self.named.add(queue)
                due.append(queue)
        return due


def message(queue: str, address: str) -> str:
    return (
        f"no worker polls task queue {queue!r} at {address}: its tasks wait until one does"
        f" (start 'factory worker --temporal {address} --task-queue {queue}')"
    )


async def unserved(client: Client, workflow_queue: str, task_queues: Iterable[str]) -> set[str]:
    """The queues among the batch's with no poller listed now (workflow tasks are polled
    on ``workflow_queue``, each task's activity on its own queue)."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    asks = [(workflow_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)]
    asks += [(q, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY) for q in sorted(set(task_queues))]
    idle = set()
    for name, kind in asks:
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=name), task_queue_type=kind
        )
        answer = await client.workflow_service.describe_task_queue(request)
        if not answer.pollers:
            idle.add(name)
    return idle
