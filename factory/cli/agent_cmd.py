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

from factory.cli.framework import emit_stdout, refuse_non_utf8, say
from factory.errors import ExitCode, UsageError

HELP = """\
Run a coding agent on TASK in the linked git worktree W and write a receipt to R.

  worker (claude) → candidate identity (code) → read-only reviewer (codex)
    APPROVE          → completed, exit 0
    REQUEST_CHANGES  → exactly one repair (claude) → a fresh reviewer → its verdict is final:
                       APPROVE → exit 0, REQUEST_CHANGES → rejected, exit 3

W must be a clean *linked* worktree ('git worktree add'). Or let factory create one:
--repo REPO (any folder inside a repository, a linked worktree or a bare repository)
creates a fresh linked worktree at --base (default: REPO's HEAD, pinned to a full commit
id) in --worktree-dir (default: a new folder beside the repository, named after the run)
on a new branch (--branch, default factory/run-<id>; --branch "" for a detached HEAD),
with the base's raw bytes — no hooks, no filters — and then admits it like any other.
The worktree stays after the run, whatever its outcome; the receipt names it, and
'factory worktree remove R' removes it when it is clean or holds exactly the candidate.
R and the evidence folder (default R.evidence) must not exist and must lie outside W and
its git directories.
stdout: the terminal receipt (canonical JSON). stderr: progress (no task text, no paths).
Exit codes: 0 completed, 2 refused before anything ran, 3 rejected, 4 typed failure,
130 interrupted (SIGINT/SIGTERM at any point; the receipt says what the run had reached),
1 internal error. If the receipt is written but stdout is not (a full device), exit 4
'output-write-failed': read R; do not rerun.
APPROVE grants no publication authority. With --rehearsal the real CLIs talk to a scripted
loopback model: that proves the control path, nothing about model judgement.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("agent", help="run worker → review → one repair → review", description=HELP)
    add_worktree_flags(p)
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


def add_worktree_flags(p: Any) -> None:
    """``--worktree W`` or ``--repo REPO [--base] [--worktree-dir] [--branch]`` (exactly one
    of the two; see :func:`check_worktree_flags`). ``factory operator run`` takes them too."""
    p.add_argument("--worktree", metavar="W", help="a clean linked git worktree")
    p.add_argument(
        "--repo", metavar="REPO", help="create a fresh linked worktree of this repository"
    )
    p.add_argument("--base", metavar="REV", help="with --repo: the base commit (default HEAD)")
    p.add_argument(
        "--worktree-dir", metavar="D", help="with --repo: the new folder (must not exist)"
    )
    p.add_argument(
        "--branch",
        metavar="NAME",
        help='with --repo: the new branch (default factory/run-<id>; "" detaches HEAD)',
    )


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
    SIGNALS.install()
    human = args.progress == "human"
    banner = human and args.rehearsal is not None
    if banner:
        say(REHEARSAL_BANNER)
    exit_code, receipt = execute(args)
    kept_in = f"the receipt {os.path.abspath(args.out)}" if receipt else None
    emit_stdout(receipt, kept_in=kept_in)
    line = error_line(receipt) if human else None
    if line is not None:
        say(line)
    if banner:
        say(REHEARSAL_BANNER)
    return int(ExitCode.INTERRUPTED) if SIGNALS.seen else exit_code


class Signals:
    """SIGINT and SIGTERM for the whole of ``factory agent``, not only while the run is in
    trio: a signal is noted, never allowed to end the process by itself.

    During the run the handler also cancels the run (through the trio token, which is safe
    from a signal handler), which writes its ``interrupted`` receipt; before the run starts
    it is noted and cancels the run at once; after the run ended (the terminal receipt is
    written: a Ctrl-C exactly at completion, a second SIGTERM while the receipt is printed)
    it is noted too. Whenever one
    was noted, the command exits 130 once the receipt is on stdout — the receipt says what
    happened (``interrupted``, or the outcome the run had already reached).
    """

    def __init__(self) -> None:
        self.seen = False
        self.on_signal: Callable[[], object] | None = None

    def note(self, signum: int, frame: object) -> None:
        """The handler (Python runs it in the main thread between bytecodes, also while
        trio waits: trio's wakeup fd interrupts the wait)."""
        self.seen = True
        act = self.on_signal
        if act is not None:
            with contextlib.suppress(RuntimeError):  # the run is finishing: noted is enough
                act()

    def install(self) -> list[Any]:
        """Install :meth:`note` for SIGINT and SIGTERM; the previous handlers, to restore
        (nothing is installed outside the main thread, where Python allows no handler)."""
        previous = []
        try:
            for sig in _SIGNALS_NOTED:
                previous.append((sig, signal.signal(sig, self.note)))
        except ValueError:
            pass
        return previous

    @staticmethod
    def restore(previous: list[Any]) -> None:
        for sig, handler in previous:
            signal.signal(sig, handler)


SIGNALS = Signals()
_SIGNALS_NOTED = (signal.SIGINT, signal.SIGTERM)


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

    refuse_non_utf8(args, {dest: "--" + dest.replace("_", "-") for dest in _TEXT_FLAGS})
    check_worktree_flags(args)
    check_endpoint(args.otel_endpoint)
    scenario = None
    if args.rehearsal is not None:
        from factory.rehearsal import load_scenario

        scenario = load_scenario(Path(args.rehearsal))
    request = AgentRequest(
        worktree=Path(args.worktree if args.repo is None else args.repo),
        task=args.task,
        receipt=Path(args.out),
        evidence=Path(args.evidence) if args.evidence is not None else None,
        timeout_ms=args.timeout_ms,
    )
    prelude = None
    if args.repo is not None:
        # Every refusal of the creating form happens here, before anything is created.
        prelude = _prepare_creation(args, request)
        request, evidence = prelude.planned.request, prelude.planned.evidence
    else:
        evidence = admit(request).evidence  # refusals exit 2 before any provider is imported
    agent, reviewer = load_profiles()
    observer, tasks, trace_id = _observer(args)
    # For the run only when called by another command (demo, operator): their own prompts
    # after it must stay interruptible. 'factory agent' installed the handler already.
    previous = SIGNALS.install()
    try:
        code, data = trio.run(
            _main,
            request,
            agent,
            reviewer,
            observer,
            tasks,
            scenario,
            evidence,
            trace_id,
            prelude,
        )
    finally:
        SIGNALS.restore(previous)
    return (int(ExitCode.INTERRUPTED) if SIGNALS.seen else code), data


_TEXT_FLAGS = (
    "worktree",
    "repo",
    "base",
    "worktree_dir",
    "branch",
    "task",
    "out",
    "evidence",
    "rehearsal",
    "otel_endpoint",
)


WORKTREE_OR_REPO = UsageError.define(
    "worktree-or-repo",
    "pass --worktree W (an existing linked worktree) or --repo REPO (factory creates one)",
)
CREATION_FLAG_NEEDS_REPO = UsageError.define(
    "creation-flag-needs-repo", "--base, --worktree-dir and --branch go with --repo only"
)
_CREATION_FLAGS = (("base", "--base"), ("worktree_dir", "--worktree-dir"), ("branch", "--branch"))


def check_worktree_flags(args: argparse.Namespace) -> None:
    """Exactly one of --worktree and --repo; the creation flags only with --repo (exit 2).

    A caller that builds the namespace itself (the demo, the operator) may leave the
    creation flags out: they default to absent.
    """
    from factory.cli.digest_cmd import EMPTY_PATH

    for dest in ("repo", "base", "worktree_dir", "branch"):
        if not hasattr(args, dest):
            setattr(args, dest, None)

    if (args.worktree is None) == (args.repo is None):
        raise WORKTREE_OR_REPO("give exactly one of --worktree and --repo")
    for dest, flag in (("repo", "--repo"), *_CREATION_FLAGS[:2]):
        if getattr(args, dest) == "":
            raise EMPTY_PATH(f"{flag} is empty")
    if args.repo is None:
        for dest, flag in _CREATION_FLAGS:
            if getattr(args, dest) is not None:
                raise CREATION_FLAG_NEEDS_REPO(f"{flag} was given with --worktree")


def _prepare_creation(args: argparse.Namespace, draft: Any) -> Any:
    from factory.agent.creating import prepare
    from factory.gitio.create import WorktreeSpec

    spec = WorktreeSpec(
        repo=Path(args.repo),
        base=args.base,
        path=Path(args.worktree_dir) if args.worktree_dir is not None else None,
        branch=args.branch,
    )
    return prepare(spec, draft)


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
    prelude: Any = None,
) -> tuple[int, bytes]:
    import trio

    from factory.agent.faults import interrupted, typed_error
    from factory.agent.run import AgentDeps, run_agent
    from factory.errors import ExitCode

    run_scope = trio.CancelScope()
    outcome = None

    async def watch_signals(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        token = trio.lowlevel.current_trio_token()
        SIGNALS.on_signal = lambda: token.run_sync_soon(run_scope.cancel)
        try:
            if SIGNALS.seen:  # noted before the run began: cancel it before it starts
                run_scope.cancel()
            task_status.started()
            await trio.sleep_forever()
        finally:
            SIGNALS.on_signal = None

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
                    outcome = await run_agent(request, deps, prelude=prelude)
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
