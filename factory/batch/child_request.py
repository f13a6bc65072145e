"""The typed hand-off to one agent attempt's child process (issue 25).

A batch (:mod:`factory.batch.local`) and a remote worker (:mod:`factory.distributed.runner`)
run each attempt in a child process: the process is the isolation boundary (a crash, a
hang or a kill of one attempt ends that attempt only; the supervisor ends its whole process
tree). The child is not factory's CLI: it is the dedicated entry
:mod:`factory.cli.agent_child` (``python -I -m factory.cli.agent_child REQUEST``), and what
it is asked is this document, written to a file in the attempt's folder before the child
starts. Its result is never read from its stdout: the parent reads the receipt the child
wrote at ``out`` and verifies it in-process (the child's stderr carries only progress lines
for the screen and one diagnostic line). See design/batch.md, "The attempt's child".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from factory import fsio
from factory.choices import Choices
from factory.models import StrictModel
from factory.selfexec import ISOLATED

SCHEMA: Final = "factory.agent-child-request/1"
#: The one module a batch or a remote worker starts (the test of no self-spawning allows
#: exactly this name).
CHILD_MODULE: Final = "factory.cli.agent_child"
REQUEST_NAME = "agent-request.json"


class AgentChildRequest(StrictModel):
    """One agent attempt, as ``factory agent --repo`` would take it (paths absolute)."""

    schema_id: Literal["factory.agent-child-request/1"] = Field(default=SCHEMA, alias="schema")
    repo: str
    base: str
    task: str
    out: str
    timeout_ms: int
    worktree_dir: str | None = None
    branch: str | None = None
    rehearsal: str | None = None
    credentials: str | None = None
    credentials_env: str | None = None
    model: str | None = None
    reviewer_model: str | None = None
    max_turns: int | None = None
    max_budget_usd: str | None = None

    def choices(self) -> Choices:
        return Choices(self.model, self.reviewer_model, self.max_turns, self.max_budget_usd)


def with_choices(request: AgentChildRequest, choices: Choices) -> AgentChildRequest:
    """``request`` carrying the (already checked) model choices."""
    return request.model_copy(
        update={
            "model": choices.model,
            "reviewer_model": choices.reviewer_model,
            "max_turns": choices.max_turns,
            "max_budget_usd": choices.max_budget_usd,
        }
    )


def write_request(folder: Path, request: AgentChildRequest) -> Path:
    """The request's canonical bytes in ``folder`` (written once: a fresh attempt folder)."""
    path = folder / REQUEST_NAME
    fsio.write_exclusive(path, request.canonical(), mode=0o600)
    return path


def child_argv(request_file: Path) -> list[str]:
    """``<this python> -I -m factory.cli.agent_child REQUEST`` (isolated, as
    :mod:`factory.selfexec` explains)."""
    return [sys.executable, *ISOLATED, "-m", CHILD_MODULE, os.fspath(request_file)]
