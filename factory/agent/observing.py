"""Wiring for `factory agent`'s observers: `--progress` and `--otel-endpoint` (SPEC A-9, A-10).

The CLI calls :func:`make_observer` while it validates flags — before admission — so a
refused endpoint exits 2 before any effect; then it runs the agent inside
:func:`with_heartbeat`, which starts the 10 s heartbeat task beside the run and stops it
when the run returns or raises::

    observer, progress = make_observer(args.progress, args.otel_endpoint,
                                       stream=sys.stderr, timeout_ms=args.timeout_ms)
    outcome = await with_heartbeat(progress, run_agent, request, deps_with(observer))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TextIO, TypeVar

import trio

from factory.agent.observer import FanOut, RunObserver
from factory.agent.progress import DEFAULT_HEARTBEAT_S, ProgressMode, ProgressObserver

T = TypeVar("T")


def make_observer(
    progress: ProgressMode | None,
    otel_endpoint: str | None,
    *,
    stream: TextIO,
    timeout_ms: int,
) -> tuple[RunObserver, ProgressObserver | None]:
    """The run's observer (progress and/or telemetry, fanned out) and the progress part.

    ``progress=None`` means no progress output; ``otel_endpoint=None`` no telemetry.

    Raises:
        EndpointRefused: (``otel-endpoint-refused``, exit 2) the endpoint is not ``http://``
            to a literal loopback IP. Raised before any observer starts a thread.
    """
    observers: list[RunObserver] = []
    if otel_endpoint is not None:
        from factory.agent.telemetry import TelemetryObserver, parse_endpoint

        endpoint = parse_endpoint(otel_endpoint)  # refuse before building anything
        observers.append(TelemetryObserver(endpoint))
    progress_observer: ProgressObserver | None = None
    if progress is not None:
        progress_observer = ProgressObserver(progress, stream, timeout_ms)
        observers.insert(0, progress_observer)
    return FanOut(*observers), progress_observer


async def with_heartbeat(
    progress: ProgressObserver | None,
    fn: Callable[..., Awaitable[T]],
    *args: object,
    interval_s: float = DEFAULT_HEARTBEAT_S,
) -> T:
    """``await fn(*args)`` with ``progress.heartbeat`` running beside it (if any).

    The heartbeat is cancelled when ``fn`` returns or raises; its own failures never
    reach ``fn`` (the heartbeat swallows them). Whatever ``fn`` raises propagates as
    itself, not wrapped in an exception group, so the CLI's exit-code mapping
    (``UsageError`` → 2, ``KeyboardInterrupt`` → 130, …) still sees it.
    """
    if progress is None:
        return await fn(*args)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(progress.heartbeat, interval_s)
            try:
                return await fn(*args)
            finally:
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The heartbeat raises nothing but Cancelled (absorbed by the nursery), so a group
        # here holds exactly what fn raised.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
