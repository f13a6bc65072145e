"""One agent cycle as the CLI layer runs it: :class:`AgentCall` (``factory agent``'s flags,
typed) and :func:`execute`, which admits it, wires the effects and runs it under trio.

``factory agent`` builds its call from the parsed flags (:meth:`AgentCall.from_args`); the
demo and ``factory operator run`` build theirs with keywords, so mypy checks every field
they pass. Provider profiles, the rehearsal route and the progress/telemetry observers are
imported inside the functions that use them, and ``factory agent`` imports this module only
when it runs, so ``factory --help`` stays fast; this layer is the only one that knows about
``providers/``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import trio

from factory.choices import Choices, choices_of, with_choices
from factory.errors import ExitCode

if TYPE_CHECKING:
    from signal import _HANDLER

    from factory.agent.admission import Admitted, AgentRequest
    from factory.agent.creating import Prelude
    from factory.agent.deps import RouteReport
    from factory.agent.observer import RunObserver
    from factory.credentials import ApiKeys
    from factory.provider_api import AgentProfile, ReviewerProfile, Route, RouteName
    from factory.rehearsal import RehearsalSession
    from factory.rehearsal.scenario import Scenario

Progress = Literal["human", "jsonl"]
Task = Callable[[], Awaitable[None]]
ReportHook = Callable[[], "RouteReport | None"]


@dataclass(frozen=True, slots=True)
class AgentCall:
    """What one agent cycle is asked to do: ``factory agent``'s flags as values.

    Exactly one of ``worktree`` (an existing linked worktree) and ``repo`` (factory creates
    one, at ``base`` in ``worktree_dir`` on ``branch``); ``out`` is the receipt path and
    ``rehearsal`` a scenario file for the scripted loopback model. Checked when executed
    (:func:`execute`), with the same refusals (exit 2) as the command's flags.
    """

    task: str
    out: Path
    worktree: Path | None = None
    repo: Path | None = None
    base: str | None = None
    worktree_dir: Path | None = None
    branch: str | None = None
    evidence: Path | None = None
    timeout_ms: int = 600_000
    progress: Progress = "human"
    otel_endpoint: str | None = None
    rehearsal: Path | None = None
    credentials: Path | None = None
    credentials_env: str | None = None
    choices: Choices = field(default_factory=Choices)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AgentCall:
        """The call ``factory agent``'s parsed flags ask for (refusals exit 2 first: a flag
        that is empty or not UTF-8 is judged as the text the user typed)."""
        from factory.cli.agent_cmd import TEXT_FLAGS, check_worktree_flags
        from factory.cli.framework import refuse_non_utf8

        refuse_non_utf8(args, TEXT_FLAGS)
        check_worktree_flags(args)

        def path(value: str | None) -> Path | None:
            return None if value is None else Path(value)

        return cls(
            task=args.task,
            out=Path(args.out),
            worktree=path(args.worktree),
            repo=path(args.repo),
            base=args.base,
            worktree_dir=path(args.worktree_dir),
            branch=args.branch,
            evidence=path(args.evidence),
            timeout_ms=args.timeout_ms,
            progress=args.progress,
            otel_endpoint=args.otel_endpoint,
            rehearsal=_scenario(args.rehearsal),
            credentials=path(args.credentials),
            credentials_env=args.credentials_env,
            choices=choices_of(args),
        )


def _observer(call: AgentCall) -> tuple[RunObserver, list[Task], str | None]:
    """The run's observer (progress + telemetry), the background tasks it needs, and the
    trace id the receipt records (None without telemetry)."""
    import sys

    from factory.agent.observer import FanOut
    from factory.agent.progress import ProgressObserver

    progress = ProgressObserver(call.progress, sys.stderr, call.timeout_ms)
    observers: list[RunObserver] = [progress]
    tasks: list[Task] = [progress.heartbeat]
    trace_id = None
    if call.otel_endpoint is not None:
        from factory.agent.telemetry import TelemetryObserver

        telemetry = TelemetryObserver(call.otel_endpoint)
        observers.append(telemetry)
        trace_id = telemetry.trace_id
    return FanOut(*observers), tasks, trace_id


def load_profiles() -> tuple[AgentProfile, ReviewerProfile]:
    """The two closed profiles: ``claude`` (worker, repair) and ``codex`` (reviewer).

    The one place the CLI layer reaches into ``providers/``; tests swap fakes in here.
    """
    import providers

    return providers.claude_profile(), providers.codex_profile()


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


def execute(call: AgentCall, *, started: Callable[[], None] | None = None) -> tuple[int, bytes]:
    """Admit, run and close one agent cycle; return the exit code and the receipt bytes.

    Refusals raise :class:`~factory.errors.UsageError` (exit 2) before anything runs;
    ``started`` is called once every refusal is behind and the cycle is about to run (a
    rehearsal's banner goes there, never above a refusal: issue 28).
    """
    from factory.agent.admission import AgentRequest, admit
    from factory.cli.agent_cmd import TEXT_FLAGS, check_endpoint, check_worktree_flags
    from factory.cli.framework import refuse_non_utf8

    refuse_non_utf8(call, TEXT_FLAGS)
    check_worktree_flags(call)
    check_endpoint(call.otel_endpoint)
    from factory import credentials

    keys = credentials.load(call.credentials, call.credentials_env, os.environ)
    if keys is not None and call.rehearsal is not None:
        raise credentials.CREDENTIALS_INVALID("the rehearsal route takes no credentials")
    scenario = None
    if call.rehearsal is not None:
        from factory.rehearsal import load_scenario

        scenario = load_scenario(call.rehearsal)
    where = call.worktree if call.repo is None else call.repo
    assert where is not None  # check_worktree_flags: exactly one of the two
    request = AgentRequest(
        worktree=where,
        task=call.task,
        receipt=call.out,
        evidence=call.evidence,
        timeout_ms=call.timeout_ms,
    )
    prelude, admitted = None, None
    if call.repo is not None:
        # Every refusal of the creating form happens here, before anything is created.
        prelude = _prepare_creation(call, call.repo, request)
        request, evidence = prelude.planned.request, prelude.planned.evidence
    else:
        admitted = admit(request)  # refusals exit 2 before any provider is imported
        evidence = admitted.evidence
    agent, reviewer = with_choices(*load_profiles(), call.choices)
    from factory.cli.preflight import preflight

    # Still before anything exists: a provider that could not start refuses the run here.
    route_name: RouteName = (
        "rehearsal" if scenario is not None else ("api" if keys is not None else "subscription")
    )
    preflight(agent, reviewer, route=route_name)
    if prelude is not None and call.repo is not None and call.progress == "human":
        _note_uncommitted(call.repo, prelude.planned.base_commit)
    if started is not None:
        started()
    observer, tasks, trace_id = _observer(call)
    # For the run only when called by another command (demo, operator): their own prompts
    # after it must stay interruptible. 'factory agent' installed the handler already.
    previous = SIGNALS.install()
    try:
        run = _Run(
            request, agent, reviewer, observer, tasks, scenario, evidence, trace_id, keys, admitted
        )
        code, data = trio.run(run.main, prelude)
    finally:
        SIGNALS.restore(previous)
    return (int(ExitCode.INTERRUPTED) if SIGNALS.seen else code), data


def _note_uncommitted(repo: Path, base_commit: str) -> None:
    from factory.agent.creating import uncommitted_note
    from factory.cli.framework import say

    note = uncommitted_note(repo, base_commit)
    if note is not None:
        say(note)


def _prepare_creation(call: AgentCall, repo: Path, draft: AgentRequest) -> Prelude:
    from factory.agent.creating import prepare
    from factory.gitio.create import WorktreeSpec

    spec = WorktreeSpec(repo=repo, base=call.base, path=call.worktree_dir, branch=call.branch)
    return prepare(spec, draft)


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
class _Run:
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
    admitted: Admitted | None = None  # the admission execute made, passed on (issue 25)

    async def main(self, prelude: Prelude | None) -> tuple[int, bytes]:
        from factory.agent.faults import interrupted, typed_error

        run_scope = trio.CancelScope()
        outcome = None
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(_watch_signals, run_scope)
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
            outcome = await run_agent(self.request, deps, prelude=prelude, admitted=self.admitted)
        return outcome.exit_code, outcome.data


async def _watch_signals(
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


def _scenario(value: str | None) -> Path | None:
    """``--rehearsal``'s file (a path, or a built-in name); the rehearsal package is
    imported only when the flag is given."""
    if value is None:
        return None
    from factory.rehearsal.scenario import scenario_path

    return scenario_path(value)
