"""The one place asyncio meets trio: the Temporal SDK's event loop in a thread of its own.

factory's process keeps trio in its main thread, where signals arrive and where the process
supervisor forks (its death signal is tied to the forking thread). :class:`SdkLoop` runs one
asyncio coroutine (the SDK's client or worker) in a daemon thread; trio awaits it, and
cancelling the trio side asks the coroutine to stop and waits for it. The other direction,
an activity asking trio to run a task, goes through :func:`trio.from_thread.run` with the
loop's token, from an executor thread so the SDK's loop never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class SdkLoop(Generic[T]):
    """Run ``make(stop)`` on an asyncio loop in its own thread; ``stop`` is an asyncio event
    the coroutine should watch to end early (set when the trio side is cancelled)."""

    def __init__(self, make: Callable[[asyncio.Event], Awaitable[T]]) -> None:
        self._make = make
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None

    def _thread(self, done: trio.lowlevel.TrioToken, finished: trio.Event) -> None:
        async def main() -> T:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            return await self._make(self._stop)

        try:
            self._result = asyncio.run(main())
        except BaseException as exc:  # handed to the trio side, which re-raises it
            self._error = exc
        finally:
            self._ready.set()
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(finished.set, trio_token=done)

    def request_stop(self) -> None:
        """Ask the coroutine to end (thread-safe, idempotent)."""
        self._ready.wait()
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stop.set)

    async def run(self) -> T:
        """Start the thread and wait for the coroutine; cancellation stops it first."""
        finished = trio.Event()
        token = trio.lowlevel.current_trio_token()
        thread = threading.Thread(
            target=self._thread, args=(token, finished), name="temporal-sdk", daemon=True
        )
        thread.start()
        try:
            await finished.wait()
        except BaseException:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self.request_stop)
                await finished.wait()
            raise
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]
