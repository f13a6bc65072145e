"""``python tests/agent/signal_factory.py MODE MARKER -- factory args...``: the real CLI with
in-process fake profiles, sending itself a signal at an exact moment (issue 8 §7):

* ``int-at-completion``: SIGINT the moment the terminal receipt is written (inside the run);
* ``int-before-stdout``: SIGINT after the run, just before the receipt goes to stdout;
* ``term-twice``: the worker holds (MARKER says so; the test sends the first SIGTERM), and a
  second SIGTERM arrives after the run, just before the receipt goes to stdout.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from factory.agent.observer import FanOut, NullObserver, Outcome, RunObserver
from factory.cli import agent_cmd, agent_exec
from factory.cli.main import main
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


if __name__ == "__main__":
    mode = sys.argv[1]
    rest = sys.argv[sys.argv.index("--") + 1 :]
    if mode == "term-twice":
        profiles: Any = lambda: (HoldingAgent([]), FakeReviewer([]))  # noqa: E731
        _signal_before(signal.SIGTERM)
    else:
        profiles = lambda: (FakeAgent([Step(effect=FIX)]), FakeReviewer([Step()]))  # noqa: E731
    if mode == "int-at-completion":
        observer = agent_exec._observer

        def with_signal(
            call: agent_exec.AgentCall,
        ) -> tuple[RunObserver, list[agent_exec.Task], str | None]:
            fan, tasks, trace_id = observer(call)  # the observer, then what the CLI wires
            return FanOut(fan, SignalOnClose(signal.SIGINT)), tasks, trace_id

        agent_exec._observer = with_signal
    if mode == "int-before-stdout":
        _signal_before(signal.SIGINT)
    agent_exec.load_profiles = profiles
    sys.exit(main(rest))
