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
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import trio

from factory.choices import Choices, choices_of, with_choices
from factory.cli.agent_cycle import CycleRun, Task
from factory.cli.agent_signals import SIGNALS
from factory.errors import ExitCode

if TYPE_CHECKING:
    from factory.agent.admission import Admitted, AgentRequest
    from factory.agent.creating import Prelude
    from factory.agent.observer import RunObserver
    from factory.credentials import ApiKeys
    from factory.provider_api import AgentProfile, ReviewerProfile, RouteName
    from factory.rehearsal.scenario import Scenario

Progress = Literal["human", "jsonl"]


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


def execute(call: AgentCall, *, started: Callable[[], None] | None = None) -> tuple[int, bytes]:
    """Admit, run and close one agent cycle; return the exit code and the receipt bytes.

    Refusals raise :class:`~factory.errors.UsageError` (exit 2) before anything runs;
    ``started`` is called once every refusal is behind and the cycle is about to run (a
    rehearsal's banner goes there, never above a refusal: issue 28).
    """
    with contextlib.ExitStack() as lock:  # the worktree's lock, held for the whole run
        return _execute(call, lock, started)


def _execute(
    call: AgentCall, lock: contextlib.ExitStack, started: Callable[[], None] | None
) -> tuple[int, bytes]:
    keys, scenario = _checked_inputs(call)
    request, prelude, admitted, evidence = _admitted(call, lock)
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
        run = CycleRun(
            request, agent, reviewer, observer, tasks, scenario, evidence, trace_id, keys, admitted
        )
        code, data = trio.run(run.main, prelude)
    finally:
        SIGNALS.restore(previous)
    return (int(ExitCode.INTERRUPTED) if SIGNALS.seen else code), data


def _checked_inputs(call: AgentCall) -> tuple[ApiKeys | None, Scenario | None]:
    """The flags' refusals (exit 2), then the credentials and the rehearsal scenario."""
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
    return keys, scenario


def _admitted(
    call: AgentCall, lock: contextlib.ExitStack
) -> tuple[AgentRequest, Prelude | None, Admitted | None, Path]:
    """The request, admitted: a creation's prelude (``--repo``) or the worktree's admission
    (exactly one of the two is set), and the evidence folder. The worktree form takes the
    worktree's lock into ``lock`` first and admits once under it (``worktree-busy`` here)."""
    from factory.agent.admission import (
        AgentRequest,
        admit,
        check_task_and_timeout,
        hold_worktree,
    )
    from factory.gitio.worktree import locate

    where = call.worktree if call.repo is None else call.repo
    assert where is not None  # check_worktree_flags: exactly one of the two
    request = AgentRequest(
        worktree=where,
        task=call.task,
        receipt=call.out,
        evidence=call.evidence,
        timeout_ms=call.timeout_ms,
    )
    if call.repo is not None:
        # Every refusal of the creating form happens here, before anything is created.
        prelude = _prepare_creation(call, call.repo, request)
        return prelude.planned.request, prelude, None, prelude.planned.evidence
    check_task_and_timeout(request)  # what needs no worktree is refused first, as admit does
    lock.enter_context(hold_worktree(locate(request.worktree)))
    admitted = admit(request)  # under the lock; refusals exit 2 before any provider is imported
    return request, None, admitted, admitted.evidence


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


def _scenario(value: str | None) -> Path | None:
    """``--rehearsal``'s file (a path, or a built-in name); the rehearsal package is
    imported only when the flag is given."""
    if value is None:
        return None
    from factory.rehearsal.scenario import scenario_path

    return scenario_path(value)
