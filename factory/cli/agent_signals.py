"""SIGINT and SIGTERM for one agent cycle run from the CLI (``factory agent``, the demo,
``factory operator run``): :data:`SIGNALS` notes a signal, never lets it end the process by
itself, and :func:`watch_signals` routes a noted one into the running cycle's cancel scope.
Split out of :mod:`factory.cli.agent_exec` (issue 25); no behaviour changed.
"""

from __future__ import annotations

import atexit
import contextlib
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from signal import _HANDLER


class Signals:
    """SIGINT and SIGTERM for the whole of ``factory agent``, not only while the run is in
    trio: a signal is noted, never allowed to end the process by itself.

    During the run the handler also cancels the run (through the trio token, which is safe
    from a signal handler), which writes its ``interrupted`` receipt; before the run starts
    it is noted and cancels the run at once; after the run ended (the terminal receipt is
    written: a Ctrl-C exactly at completion, a second SIGTERM while the receipt is printed)
    it is noted too. Whenever one was noted, the command exits 130 once the receipt is on
    stdout — the receipt says what happened (``interrupted``, or the outcome the run had
    already reached).

    That holds to the last instruction: at interpreter exit, after the ``atexit`` calls,
    Python puts every signal that has a Python handler back to its default action, so a
    signal in the final teardown ended the process (143 / -15, -2) after the receipt said
    130. The last ``atexit`` call therefore turns a still-installed :meth:`note` into
    ``SIG_IGN``: the exit code is decided by then and a late signal can change nothing.
    """

    def __init__(self) -> None:
        self.seen = False
        self.on_signal: Callable[[], object] | None = None
        self._at_exit = False

    def note(self, signum: int, frame: object) -> None:
        """The handler (Python runs it in the main thread between bytecodes, also while
        trio waits: trio's wakeup fd interrupts the wait)."""
        self.seen = True
        act = self.on_signal
        if act is not None:
            with contextlib.suppress(RuntimeError):  # the run is finishing: noted is enough
                act()

    def install(self) -> list[tuple[signal.Signals, _HANDLER]]:
        """Install :meth:`note` for SIGINT and SIGTERM; the previous handlers, to restore
        (nothing is installed outside the main thread, where Python allows no handler)."""
        previous = []
        try:
            for sig in _SIGNALS_NOTED:
                previous.append((sig, signal.signal(sig, self.note)))
        except ValueError:
            pass
        if previous and not self._at_exit:
            self._at_exit = True
            atexit.register(self.ignore_at_exit)  # registered first: it runs last
        return previous

    def ignore_at_exit(self) -> None:
        """Ignore SIGINT/SIGTERM where :meth:`note` is still the handler (``factory agent``
        keeps it to its exit; a command that restored its own handlers is left alone)."""
        for sig in _SIGNALS_NOTED:
            if signal.getsignal(sig) == self.note:
                signal.signal(sig, signal.SIG_IGN)

    @staticmethod
    def restore(previous: list[tuple[signal.Signals, _HANDLER]]) -> None:
        for sig, handler in previous:
            signal.signal(sig, handler)


SIGNALS = Signals()
_SIGNALS_NOTED = (signal.SIGINT, signal.SIGTERM)


async def watch_signals(
    run_scope: trio.CancelScope, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Route a noted signal into ``run_scope`` for as long as the run lasts."""
    token = trio.lowlevel.current_trio_token()
    SIGNALS.on_signal = lambda: token.run_sync_soon(run_scope.cancel)
    try:
        if SIGNALS.seen:  # noted before the run began: cancel it before it starts
            run_scope.cancel()
        task_status.started()
        await trio.sleep_forever()
    finally:
        SIGNALS.on_signal = None
