"""The trio part of one agent cycle run from the CLI: :class:`CycleRun` (everything the
run needs, decided before trio starts), the route it runs on (subscription, api or the
rehearsal's scripted loopback model) and the rehearsal's report. Split out of
:mod:`factory.cli.agent_exec` (issue 25); no behaviour changed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from factory.cli.agent_signals import watch_signals
from factory.errors import ExitCode

if TYPE_CHECKING:
    from factory.agent.admission import Admitted, AgentRequest
    from factory.agent.creating import Prelude
    from factory.agent.deps import RouteReport
    from factory.agent.observer import RunObserver
    from factory.credentials import ApiKeys
    from factory.provider_api import AgentProfile, ReviewerProfile, Route
    from factory.rehearsal import RehearsalSession
    from factory.rehearsal.scenario import Scenario

Task = Callable[[], Awaitable[None]]
ReportHook = Callable[[], "RouteReport | None"]


def rehearsal_report(session: RehearsalSession) -> RouteReport:
    """The rehearsal log (``factory.rehearsal-log/1``: every request the scripted model
    served, SPEC P-5) as a route report, with ``rehearsal-scenario-unconsumed`` as its
    problem when the CLIs did not follow the script exactly."""
    from factory.agent.deps import RouteReport
    from factory.agent.evidence import JSON
    from factory.rehearsal import SCENARIO_UNCONSUMED

    problem = None
    problems = session.problems()
    if problems:
        # The details (which may quote request paths) stay in the evidence, not the receipt.
        problem = (
            SCENARIO_UNCONSUMED,
            f"the CLIs did not follow the rehearsal scenario ({len(problems)} problem(s))",
        )
    return RouteReport(
        role="rehearsal-log",
        data=session.evidence().canonical(),
        media_type=JSON,
        problem=problem,
    )


@contextlib.asynccontextmanager
async def _route(
    scenario: Scenario | None, near: Path, keys: ApiKeys | None = None
) -> AsyncIterator[tuple[Route, ReportHook | None]]:
    """The route and its report hook (``None`` on the subscription and api routes)."""
    from factory.provider_api import ApiRoute, SubscriptionRoute

    if keys is not None:
        home = Path(tempfile.mkdtemp(prefix="factory-api-", dir=os.fspath(near.parent)))
        try:
            yield ApiRoute(keys.anthropic_api_key, keys.codex_api_key, home, keys.source), None
        finally:
            shutil.rmtree(home, ignore_errors=True)
        return
    if scenario is None:
        yield SubscriptionRoute(), None
        return
    from factory import rehearsal

    root = Path(tempfile.mkdtemp(prefix="factory-rehearsal-", dir=os.fspath(near.parent)))
    try:
        async with rehearsal.open_rehearsal(scenario, root) as session:
            yield session.route, lambda: rehearsal_report(session)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class CycleRun:
    """Everything one trio run of the cycle needs, decided before trio starts."""

    request: AgentRequest
    agent: AgentProfile
    reviewer: ReviewerProfile
    observer: RunObserver
    tasks: list[Task]
    scenario: Scenario | None
    evidence: Path
    trace_id: str | None
    keys: ApiKeys | None = None
    admitted: Admitted | None = None  # execute's admission, under the lock it holds (issue 25)

    async def main(self, prelude: Prelude | None) -> tuple[int, bytes]:
        from factory.agent.faults import interrupted, typed_error

        run_scope = trio.CancelScope()
        outcome = None
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(watch_signals, run_scope)
                for task in self.tasks:
                    nursery.start_soon(task)
                with run_scope:
                    outcome = await self._cycle(prelude)
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # A refusal raised inside run_agent (e.g. worktree-busy) arrives wrapped by the
            # nursery; unwrapped, it keeps its own exit code (2) instead of an internal error.
            typed = None if interrupted(group) else typed_error(group)
            if typed is None:
                raise
            raise typed from None
        if outcome is None:
            # Interrupted: run_agent wrote the terminal 'interrupted' receipt before unwinding.
            receipt = Path(os.path.abspath(self.request.receipt))
            data = b""
            with contextlib.suppress(OSError):
                data = receipt.read_bytes()
            return int(ExitCode.INTERRUPTED), data
        return outcome

    async def _cycle(self, prelude: Prelude | None) -> tuple[int, bytes]:
        from factory.agent.deps import AgentDeps
        from factory.agent.run import run_agent

        async with _route(self.scenario, self.evidence, self.keys) as (route, report):
            deps = AgentDeps(
                agent=self.agent,
                reviewer=self.reviewer,
                route=route,
                observer=self.observer,
                route_report=report,
                trace_id=self.trace_id,
            )
            outcome = await run_agent(
                self.request, deps, prelude=prelude, admitted=self.admitted, held=True
            )
        return outcome.exit_code, outcome.data
