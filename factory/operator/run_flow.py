"""``operator run``: a ``FACTORY_RUN`` grant for one agent cycle on one forge issue.

Observation re-reads the forge (every page) and re-checks the worktree admission; the
action runs the agent cycle (injected: the CLI wires ``factory agent`` with its closed
provider profiles) in W with the intent's task, writing the agent receipt beside OUT.

With a ``creation`` (``operator run --repo R``, issue 16) there is no W yet: observation
re-plans the worktree ``factory agent --repo`` will create (repository, the base commit
pinned once by the caller, the folder, the branch — every refusal, nothing created), the
screen shows that plan, and the action hands it to the agent cycle, which creates the
worktree only after the grant is spent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.agent.admission import AgentRequest, admit
from factory.documents.canonical import sha256_hex
from factory.errors import Code, ExitCode
from factory.gitio.create import WorktreeSpec
from factory.operator import dialog
from factory.operator.forge_client import Forge, read_forge
from factory.operator.grant import SignedGrant
from factory.operator.intent import NO_READY_WORK, PublishIntent, RunIntent
from factory.operator.receipt import AgentRunRef, Command, ErrorRecord, GateRecord
from factory.operator.session import SNAPSHOT_STALE, Outcome, StaleIntent

#: Runs one agent cycle (in the request's worktree, or in the one it creates from the spec)
#: and returns its exit code and the agent receipt's bytes.
AgentRunner = Callable[[AgentRequest, WorktreeSpec | None], tuple[int, bytes]]


def agent_receipt_path(out: Path) -> Path:
    """Where ``operator run`` writes the agent receipt: beside OUT, ``<OUT>.agent.json``."""
    return out.with_name(out.name + ".agent.json")


@dataclass
class RunFlow:
    """The :class:`~factory.operator.session.Flow` of ``operator run``."""

    forge: Forge
    repository: str
    label: str
    request: AgentRequest
    runner: AgentRunner
    command: Command = "run"
    stale_code: Code[StaleIntent] = SNAPSHOT_STALE
    #: ``operator run --repo``: the worktree to create (base pinned, folder and branch fixed).
    creation: WorktreeSpec | None = None
    gate_record: GateRecord | None = None  # a run is authorized by its forge issue, no gate

    def admit(self) -> None:
        return None

    def observe(self) -> RunIntent:
        intent = read_forge(self.forge, self.repository, self.label)
        if intent.state != "AWAITING_AUTHORITY":
            raise NO_READY_WORK("no open issue carries the label")
        if self.creation is None:
            admit(self.request)  # the worktree is still linked and clean, the outputs free
        else:
            from factory.agent.creating import prepare

            prepare(self.creation, self.request)  # still creatable, the outputs free
        return intent

    def screen(self, intent: RunIntent | PublishIntent) -> list[str]:
        assert isinstance(intent, RunIntent)
        lines = dialog.render_run(intent)
        if self.creation is None:
            place = [dialog.field("worktree", self.request.worktree)]
        else:
            spec = self.creation
            place = [
                dialog.field("worktree (factory creates it)", spec.path),
                dialog.field("base commit", spec.base),
                dialog.field("branch", spec.branch or "(detached HEAD)"),
            ]
        return [*lines[:-1], *place, dialog.field("agent receipt", self.request.receipt), lines[-1]]

    def execute(self, intent: RunIntent | PublishIntent, grant: SignedGrant) -> Outcome:
        assert isinstance(intent, RunIntent) and intent.task is not None
        request = AgentRequest(
            worktree=self.request.worktree,
            task=intent.task,
            receipt=self.request.receipt,
            evidence=self.request.evidence,
            timeout_ms=self.request.timeout_ms,
        )
        code, data = self.runner(request, self.creation)
        return outcome_of(code, data, self.request.receipt.name)


def outcome_of(code: int, data: bytes, name: str) -> Outcome:
    """The operator outcome of an agent cycle's exit code and receipt bytes.

    A verdict (completed or rejected) means the authorized action ran: ``executed``.
    """
    value: dict[str, Any] = {}
    try:
        parsed = json.loads(data)
        if isinstance(parsed, dict):
            value = parsed
    except (ValueError, RecursionError):
        pass
    ref = AgentRunRef(
        path=name,
        sha256=sha256_hex(data) if data else None,
        revision=value.get("revision") if isinstance(value.get("revision"), str) else None,
        status=value.get("status") if isinstance(value.get("status"), str) else None,
        exit_code=code,
    )
    if code in (ExitCode.OK, ExitCode.REJECTED):
        return Outcome(status="executed", agent_run=ref)
    if code == ExitCode.INTERRUPTED:
        return Outcome(status="interrupted", agent_run=ref)
    error = value.get("error")
    err_code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return Outcome(
        status="execution-failed",
        agent_run=ref,
        error=ErrorRecord(
            code=err_code if isinstance(err_code, str) else "agent-run-failed",
            message=message if isinstance(message, str) else "the agent cycle failed",
        ),
    )
