"""How the agent run reports its progress without letting observation change an outcome.

The run calls a :class:`RunObserver` at each stage change (SPEC A-9) and around each phase
(SPEC A-10). Implementations (progress lines on stderr, OpenTelemetry spans) must never
raise into the run: the run additionally wraps every call with :func:`safely`, so a broken
observer is swallowed and the outcome, exit code and receipt stay what they were.

Stages, in order (a run stops early on approval, failure or interruption)::

    validating → worker_running → worker_completed → initial_review_running →
    initial_review_verdict → repair_running → repair_completed → final_review_running →
    final_review_verdict → terminal_outcome

``remaining_invocations`` is the number of provider invocations still reachable
(4 → 3 → 2 → 1 → 0, never increasing; 0 right after an initial APPROVE). The upper bound on
remaining provider time is that count × the per-invocation timeout, labelled "(not an ETA)".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal, Protocol

Stage = Literal[
    "validating",
    "worker_running",
    "worker_completed",
    "initial_review_running",
    "initial_review_verdict",
    "repair_running",
    "repair_completed",
    "final_review_running",
    "final_review_verdict",
    "terminal_outcome",
]
Phase = Literal["worker", "initial_review", "repair", "final_review"]
Outcome = Literal["completed", "rejected", "failed", "interrupted"]


class RunObserver(Protocol):
    """Receives stage changes and phase boundaries. Must not affect the run."""

    def stage(
        self,
        stage: Stage,
        *,
        remaining_invocations: int,
        verdict: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        """A stage began. ``verdict`` on *_verdict stages; ``outcome`` on terminal_outcome."""
        ...

    def phase_started(self, phase: Phase) -> None:
        """A provider phase began (one telemetry span per phase)."""
        ...

    def phase_ended(self, phase: Phase, *, outcome: str, duration_ms: int) -> None:
        """A provider phase ended; ``outcome`` is ``ok``, a verdict or a failure code."""
        ...

    def close(self, *, outcome: Outcome, exit_code: int, error_code: str | None = None) -> None:
        """The run ended (``error_code``: the typed error of a failed or interrupted run);
        flush what can be flushed without blocking the exit for long."""
        ...


class NullObserver:
    """Observes nothing."""

    def stage(
        self,
        stage: Stage,
        *,
        remaining_invocations: int,
        verdict: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        return None

    def phase_started(self, phase: Phase) -> None:
        return None

    def phase_ended(self, phase: Phase, *, outcome: str, duration_ms: int) -> None:
        return None

    def close(self, *, outcome: Outcome, exit_code: int, error_code: str | None = None) -> None:
        return None


class FanOut:
    """Forwards every call to several observers; a raising observer is skipped."""

    def __init__(self, *observers: RunObserver) -> None:
        self._observers = observers

    def stage(
        self,
        stage: Stage,
        *,
        remaining_invocations: int,
        verdict: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        for o in self._observers:
            safely(
                partial(
                    o.stage,
                    stage,
                    remaining_invocations=remaining_invocations,
                    verdict=verdict,
                    outcome=outcome,
                )
            )

    def phase_started(self, phase: Phase) -> None:
        for o in self._observers:
            safely(partial(o.phase_started, phase))

    def phase_ended(self, phase: Phase, *, outcome: str, duration_ms: int) -> None:
        for o in self._observers:
            safely(partial(o.phase_ended, phase, outcome=outcome, duration_ms=duration_ms))

    def close(self, *, outcome: Outcome, exit_code: int, error_code: str | None = None) -> None:
        for o in self._observers:
            safely(partial(o.close, outcome=outcome, exit_code=exit_code, error_code=error_code))


def safely(call: Callable[[], object]) -> None:
    """Run an observer call; any ``Exception`` it raises is swallowed (SPEC A-9, A-10).

    Cancellation and KeyboardInterrupt are BaseExceptions and still propagate.
    """
    try:
        call()
    except Exception:  # observation must never change an outcome
        return
