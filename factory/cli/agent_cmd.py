"""``factory agent``: one worker, one read-only review, at most one repair and a fresh final
review, in a clean linked git worktree (SPEC A-1…A-10).

This module only parses flags and wires effects: the decisions live in
:mod:`factory.agent`. Provider profiles, the rehearsal route and the progress/telemetry
observers are imported by name inside the handler (``providers.claude_profile`` /
``providers.codex_profile``, ``factory.rehearsal.open_rehearsal``,
``factory.agent.progress.ProgressObserver``, ``factory.agent.telemetry``), so ``factory
--help`` stays fast and this layer is the only one that knows about ``providers/``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from factory.cli.framework import emit_stdout, say

HELP = """\
Run a coding agent on TASK in the linked git worktree W and write a receipt to R.

  worker (claude) → candidate identity (code) → read-only reviewer (codex)
    APPROVE          → completed, exit 0
    REQUEST_CHANGES  → exactly one repair (claude) → a fresh reviewer → its verdict is final:
                       APPROVE → exit 0, REQUEST_CHANGES → rejected, exit 3

W must be a clean *linked* worktree ('git worktree add'); R and the evidence folder
(default R.evidence) must not exist and must lie outside W and its git directories.
stdout: the terminal receipt (canonical JSON). stderr: progress (no task text, no paths).
Exit codes: 0 completed, 2 refused before anything ran, 3 rejected, 4 typed failure,
130 interrupted (the receipt says so), 1 internal error.
APPROVE grants no publication authority. With --rehearsal the real CLIs talk to a scripted
loopback model: that proves the control path, nothing about model judgement.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("agent", help="run worker → review → one repair → review", description=HELP)
    p.add_argument("--worktree", required=True, metavar="W", help="a clean linked git worktree")
    p.add_argument("--task", required=True, metavar="T", help="what the worker should do")
    p.add_argument("--out", required=True, metavar="R", help="receipt path (must not exist)")
    p.add_argument(
        "--timeout-ms",
        type=int,
        default=600_000,
        metavar="N",
        help="per provider invocation, 1000..1800000 (default 600000)",
    )
    p.add_argument("--evidence", metavar="DIR", help="evidence folder (default R.evidence)")
    p.add_argument(
        "--progress", choices=("human", "jsonl"), default="human", help="stderr progress format"
    )
    p.add_argument("--otel-endpoint", metavar="URL", help="http://127.0.0.1:PORT/v1/traces only")
    p.add_argument("--rehearsal", metavar="SCENARIO", help="scripted loopback model scenario file")
    p.set_defaults(handler=run)


def _observer(args: argparse.Namespace) -> tuple[Any, list[Callable[[], Any]], str | None]:
    """The run's observer (progress + telemetry), the background tasks it needs, and the
    trace id the receipt records (None without telemetry)."""
    from factory.agent.observer import FanOut
    from factory.agent.progress import ProgressObserver

    progress = ProgressObserver(args.progress, sys.stderr, args.timeout_ms)
    observers: list[Any] = [progress]
    tasks: list[Callable[[], Any]] = [progress.heartbeat]
    trace_id = None
    if args.otel_endpoint is not None:
        from factory.agent.telemetry import TelemetryObserver

        telemetry = TelemetryObserver(args.otel_endpoint)
        observers.append(telemetry)
        trace_id = telemetry.trace_id
    return FanOut(*observers), tasks, trace_id


def load_profiles() -> tuple[Any, Any]:
    """The two closed profiles: ``claude`` (worker, repair) and ``codex`` (reviewer).

    The one place the CLI layer reaches into ``providers/``; tests swap fakes in here.
    """
    import providers

    return providers.claude_profile(), providers.codex_profile()


def check_endpoint(url: str | None) -> None:
    """Refuse a bad ``--otel-endpoint`` at parse time (exit 2), before anything runs."""
    if url is None:
        return
    from factory.agent.telemetry import parse_endpoint

    parse_endpoint(url)


REHEARSAL_BANNER = (
    "factory agent: REHEARSAL (--rehearsal): the real CLIs talk to a scripted loopback model; "
    "this proves the control path, nothing about model judgement."
)


def run(args: argparse.Namespace) -> int:
    # Human progress of a rehearsal reads exactly like a real run: say which it is, first
    # and last, so a scripted APPROVE is never mistaken for a model's; and say why a run
    # failed, not only "finished: failed". With --progress jsonl, stderr stays JSON lines.
    human = args.progress == "human"
    banner = human and args.rehearsal is not None
    if banner:
        say(REHEARSAL_BANNER)
    exit_code, receipt = execute(args)
    emit_stdout(receipt)
    line = error_line(receipt) if human else None
    if line is not None:
        say(line)
    if banner:
        say(REHEARSAL_BANNER)
    return exit_code


def error_line(receipt: bytes) -> str | None:
    """``factory: <code>: <message>`` from a terminal receipt's typed error (its message
    carries no paths), so a failed run says why on stderr, not only in the receipt."""
    import json

    try:
        error = json.loads(receipt).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict):
        return None
    # A provider's own words may reach the message: never let them drive the terminal.
    from factory.display import inert

    return inert(f"factory: {error.get('code')}: {error.get('message')}")


def execute(args: argparse.Namespace) -> tuple[int, bytes]:
    """Admit, run and close one agent cycle; return the exit code and the receipt bytes.

    Refusals raise :class:`~factory.errors.UsageError` (exit 2) before anything runs.
    """
    import trio

    from factory.agent.admission import AgentRequest, admit

    request = AgentRequest(
        worktree=Path(args.worktree),
        task=args.task,
        receipt=Path(args.out),
        evidence=Path(args.evidence) if args.evidence is not None else None,
        timeout_ms=args.timeout_ms,
    )
    check_endpoint(args.otel_endpoint)
    scenario = None
    if args.rehearsal is not None:
        from factory.rehearsal import load_scenario

        scenario = load_scenario(Path(args.rehearsal))
    admitted = admit(request)  # refusals exit 2 before any provider is even imported
    agent, reviewer = load_profiles()
    observer, tasks, trace_id = _observer(args)
    result: tuple[int, bytes] = trio.run(
        _main, request, agent, reviewer, observer, tasks, scenario, admitted.evidence, trace_id
    )
    return result


def rehearsal_report(session: Any) -> Any:
    """The rehearsal log (``factory.rehearsal-log/1``: every request the scripted model
    served, SPEC P-5) as a route report, with ``rehearsal-scenario-unconsumed`` as its
    problem when the CLIs did not follow the script exactly."""
    from factory.agent.evidence import JSON
    from factory.agent.run import RouteReport
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
async def _route(scenario: Any, near: Path) -> AsyncIterator[tuple[Any, Any]]:
    """The route and its report hook (``None`` on the subscription route)."""
    from factory.provider_api import SubscriptionRoute

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


async def _main(
    request: Any,
    agent: Any,
    reviewer: Any,
    observer: Any,
    tasks: list[Callable[[], Any]],
    scenario: Any,
    evidence: Path,
    trace_id: str | None = None,
) -> tuple[int, bytes]:
    import trio

    from factory.agent.faults import interrupted, typed_error
    from factory.agent.run import AgentDeps, run_agent
    from factory.errors import ExitCode

    run_scope = trio.CancelScope()
    outcome = None

    async def watch_signals(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            task_status.started()
            async for _ in signals:
                run_scope.cancel()

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(watch_signals)
            for task in tasks:
                nursery.start_soon(task)
            with run_scope:
                async with _route(scenario, evidence) as (route, report):
                    deps = AgentDeps(
                        agent=agent,
                        reviewer=reviewer,
                        route=route,
                        observer=observer,
                        route_report=report,
                        trace_id=trace_id,
                    )
                    outcome = await run_agent(request, deps)
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
        receipt = Path(os.path.abspath(request.receipt))
        data = b""
        with contextlib.suppress(OSError):
            data = receipt.read_bytes()
        return int(ExitCode.INTERRUPTED), data
    return outcome.exit_code, outcome.data
