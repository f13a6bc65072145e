"""``factory worker``: take tasks from a Temporal task queue and run them on this machine.

The worker opens no port: it polls the server over an outbound connection. ``--jobs`` caps
the tasks it runs at once (Temporal's per-worker activity slots). Each task attempt is run
by :func:`factory.distributed.runner.run_attempt` in the trio loop of this process; the
activity only waits for it and heartbeats, so a worker that dies stops heartbeating and the
server gives the task to another worker once the heartbeat timeout passes.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import trio

from factory.distributed.bridge import SdkLoop
from factory.distributed.payloads import RemoteResult, RemoteTask
from factory.distributed.runner import TaskRefused, new_attempt, run_attempt
from factory.distributed.workflow import RUN_TASK, BatchWorkflow

HEARTBEAT_S = 2.0
AttemptRunner = Callable[[RemoteTask, int], Awaitable[RemoteResult]]


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """``factory worker``'s flags, typed."""

    address: str
    task_queue: str
    jobs: int
    workdir: Path
    namespace: str = "default"
    identity: str = ""

    def who(self) -> str:
        return self.identity or f"{socket.gethostname()}:{os.getpid()}"


class AttemptCancelled(Exception):
    """The attempt was cancelled (its activity was); its process tree is gone."""


class TrioSide:
    """The attempts the SDK asked for, run in the trio loop; each can be cancelled."""

    def __init__(self, cfg: WorkerConfig, token: trio.lowlevel.TrioToken) -> None:
        self.cfg = cfg
        self.token = token
        self.scopes: dict[tuple[str, int], trio.CancelScope] = {}

    async def attempt(self, task: RemoteTask, number: int) -> RemoteResult:
        with trio.CancelScope() as scope:
            self.scopes[(task.task_id, number)] = scope
            try:
                attempt = new_attempt(self.cfg.workdir, task, number, self.cfg.who())
                say(f"{task.task_id}: attempt {number} started in {attempt.folder}")
                result = await run_attempt(attempt)
                say(f"{task.task_id}: attempt {number} {result.outcome}, pushed {result.ref}")
                return result
            finally:
                del self.scopes[(task.task_id, number)]
        raise AttemptCancelled(f"{task.task_id} attempt {number} was cancelled")

    def cancel(self, task_id: str, number: int) -> None:
        scope = self.scopes.get((task_id, number))
        if scope is not None:
            scope.cancel()


def make_activity(side: TrioSide) -> Callable[[RemoteTask], Awaitable[RemoteResult]]:
    """The ``factory.run-task`` activity: hand the task to trio, heartbeat until done."""
    from temporalio import activity
    from temporalio.exceptions import ApplicationError

    @activity.defn(name=RUN_TASK)
    async def run_task(task: RemoteTask) -> RemoteResult:
        number = activity.info().attempt
        loop = asyncio.get_running_loop()
        call = functools.partial(
            trio.from_thread.run, side.attempt, task, number, trio_token=side.token
        )
        pending = loop.run_in_executor(None, call)
        try:
            while True:
                done, _ = await asyncio.wait({pending}, timeout=HEARTBEAT_S)
                if done:
                    break
                activity.heartbeat(task.task_id)
            return pending.result()
        except TaskRefused as exc:
            raise ApplicationError(str(exc), type="factory.refused", non_retryable=True) from None
        except asyncio.CancelledError:
            trio.from_thread.run_sync(side.cancel, task.task_id, number, trio_token=side.token)
            await asyncio.wait({pending})
            raise

    return run_task


async def _sdk_worker(cfg: WorkerConfig, side: TrioSide, stop: asyncio.Event) -> None:
    from temporalio.client import Client
    from temporalio.worker import Worker

    from factory.distributed.coordinator import TEMPORAL_UNREACHABLE

    try:
        client = await Client.connect(cfg.address, namespace=cfg.namespace)
    except Exception as exc:  # the SDK's connection errors (RuntimeError, RPCError)
        raise TEMPORAL_UNREACHABLE(f"{cfg.address}: {str(exc)[:200]}") from None
    worker = Worker(
        client,
        task_queue=cfg.task_queue,
        workflows=[BatchWorkflow],
        activities=[make_activity(side)],
        max_concurrent_activities=cfg.jobs,
        identity=cfg.who(),
    )
    async with worker:
        await stop.wait()


def say(line: str) -> None:
    from factory.cli.framework import say as _say

    _say(f"factory worker: {line}")


async def serve(cfg: WorkerConfig) -> None:
    """Run the worker until cancelled (Ctrl-C, SIGTERM): attempts in progress are
    cancelled, their process trees ended, and the SDK worker shut down."""
    cfg.workdir.mkdir(parents=True, exist_ok=True)
    side = TrioSide(cfg, trio.lowlevel.current_trio_token())
    loop: SdkLoop[None] = SdkLoop(lambda stop: _sdk_worker(cfg, side, stop))
    await loop.run()


async def run_until_signalled(cfg: WorkerConfig) -> int:
    """:func:`serve` until SIGINT or SIGTERM; 130 then (the worker never ends by itself
    unless the server cannot be reached, which raises)."""
    import signal

    from factory.errors import ExitCode

    say(f"polling {cfg.task_queue!r} at {cfg.address} with {cfg.jobs} slot(s) as {cfg.who()}")
    from factory.agent.faults import typed_error

    try:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:

                async def stop_on_signal() -> None:
                    async for signum in signals:
                        say(f"stopping ({signal.Signals(signum).name}); attempts in progress end")
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(stop_on_signal)
                await serve(cfg)
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # a typed failure (the server unreachable) inside
        typed = typed_error(group)
        if typed is None:
            raise
        raise typed from None
    return int(ExitCode.INTERRUPTED)
