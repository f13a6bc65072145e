"""``python tests/agent/signal_factory.py MODE MARKER -- factory args...``: the real CLI with
in-process fake profiles, sending itself a signal at an exact moment (issue 8 §7):

* ``int-at-completion``: SIGINT the moment the terminal receipt is written (inside the run);
* ``int-before-stdout``: SIGINT after the run, just before the receipt goes to stdout;
* ``term-twice``: the worker holds (MARKER says so; the test sends the first SIGTERM), and a
  second SIGTERM arrives after the run, just before the receipt goes to stdout;
* ``term-then-SIG-at-WHEN`` (SIG ``term`` or ``int``): the worker holds, the test sends the
  first SIGTERM, and the second signal arrives at WHEN: ``write``, while the run writes its
  terminal (``interrupted``) receipt — just before the bytes are written, and again just
  after; ``teardown``, in the interpreter's final teardown after the receipt is on stdout
  (a module global's ``__del__``: after Python has put its signal handlers back to the
  defaults, where a second signal used to end the process with 143 / -2).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from factory.agent import run_state
from factory.agent.observer import FanOut, NullObserver, Outcome, RunObserver
from factory.cli import agent_cmd, agent_cycle, agent_exec
from factory.cli.main import main
from factory.fsio import atomic_replace
from tests.agent.fake_factory import FIX, HoldingAgent
from tests.agent.fakes import FakeAgent, FakeReviewer, Step


class SignalOnClose(NullObserver):
    def __init__(self, sig: signal.Signals) -> None:
        self.sig = sig

    def close(self, *, outcome: Outcome, exit_code: int, **_: object) -> None:
        os.kill(os.getpid(), self.sig)


def _signal_before(sig: signal.Signals) -> None:
    emit = agent_cmd.emit_stdout  # type: ignore[attr-defined]

    def emit_after_signal(data: bytes, **kw: Any) -> None:
        os.kill(os.getpid(), sig)
        emit(data, **kw)

    agent_cmd.emit_stdout = emit_after_signal  # type: ignore[attr-defined]


def _signal_around_the_receipt_write(sig: signal.Signals) -> None:
    """The signal arrives while the terminal receipt is written: before and after the write
    (the run's only ``atomic_replace``: the reservation was ``reserve``)."""
    write = atomic_replace

    def write_under_signal(path: Path, data: bytes, **kw: Any) -> None:
        os.kill(os.getpid(), sig)
        write(path, data, **kw)
        os.kill(os.getpid(), sig)

    run_state.atomic_replace = write_under_signal  # type: ignore[attr-defined]


class SignalAtTeardown:
    """Sends ``sig`` when the interpreter clears ``__main__`` (the last thing a run does)."""

    def __init__(self, sig: signal.Signals) -> None:
        self.sig = sig

    def __del__(self, kill: Any = os.kill, pid: int = os.getpid()) -> None:
        kill(pid, self.sig)


if __name__ == "__main__":
    mode = sys.argv[1]
    rest = sys.argv[sys.argv.index("--") + 1 :]
    if mode.startswith("term-then-"):
        profiles: Any = lambda: (HoldingAgent([]), FakeReviewer([]))  # noqa: E731
        second = signal.SIGTERM if mode.startswith("term-then-term-") else signal.SIGINT
        if mode.endswith("-at-write"):
            _signal_around_the_receipt_write(second)
        else:
            AT_TEARDOWN = SignalAtTeardown(second)
    elif mode == "term-twice":
        profiles = lambda: (HoldingAgent([]), FakeReviewer([]))  # noqa: E731
        _signal_before(signal.SIGTERM)
    else:
        profiles = lambda: (FakeAgent([Step(effect=FIX)]), FakeReviewer([Step()]))  # noqa: E731
    if mode == "int-at-completion":
        observer = agent_exec._observer

        def with_signal(
            call: agent_exec.AgentCall,
        ) -> tuple[RunObserver, list[agent_cycle.Task], str | None]:
            fan, tasks, trace_id = observer(call)  # the observer, then what the CLI wires
            return FanOut(fan, SignalOnClose(signal.SIGINT)), tasks, trace_id

        agent_exec._observer = with_signal
    if mode == "int-before-stdout":
        _signal_before(signal.SIGINT)
    agent_exec.load_profiles = profiles
    sys.exit(main(rest))
