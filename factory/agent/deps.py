"""What the agent run is given and what it returns (SPEC A-1…A-10).

The run's effects are injected here with real defaults: the two provider profiles, the
route, the observer (progress, telemetry), the wall clock and the route's own report.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field

from factory.agent.observer import NullObserver, RunObserver
from factory.agent.receipt import AgentReceipt
from factory.errors import Code, FactoryError
from factory.provider_api import AgentProfile, ReviewerProfile, Route


def utc_now() -> str:
    """UTC wall-clock time, RFC 3339 with milliseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class RouteReport:
    """What the route itself recorded during the run, to be stored as evidence.

    Attributes:
        role: the evidence role (kebab-case), e.g. ``rehearsal-log``.
        data: the exact bytes to store (content-addressed, 0600, SPEC A-7).
        media_type: e.g. ``application/json``.
        problem: ``(code, what happened, without paths)`` when the route saw the run go
            outside its contract (e.g. ``rehearsal-scenario-unconsumed``); a run that would
            otherwise complete or be rejected then fails with this error (exit 4).
    """

    role: str
    data: bytes
    media_type: str
    problem: tuple[Code[FactoryError], str] | None = None


@dataclass
class AgentDeps:
    """The run's effects. ``observer`` calls are always wrapped with ``safely``.

    ``route_report``, when given, is called once while the terminal receipt is written
    (the route is still open); its :class:`RouteReport` is stored as evidence and bound by
    the receipt's ``route_evidence``. The CLI wires the rehearsal log here, so this core
    never imports the rehearsal route. ``trace_id`` is recorded in the receipt (the
    telemetry observer's trace, when there is one).
    """

    agent: AgentProfile
    reviewer: ReviewerProfile
    route: Route
    observer: RunObserver = field(default_factory=NullObserver)
    utc_now: Callable[[], str] = utc_now
    route_report: Callable[[], RouteReport | None] | None = None
    trace_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """The terminal receipt, its exact bytes, and the exit code (0, 3 or 4)."""

    receipt: AgentReceipt
    data: bytes
    exit_code: int
