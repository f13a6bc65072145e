"""One remote task on a worker machine, in trio: a fresh clone, the agent cycle under
factory's supervisor, and the bundle pushed back to the remote.

Every attempt works in a new folder (``<workdir>/runs/<task>/<attempt>-<nonce>``), so a
retry never reuses a half-finished worktree. The agent cycle is a child process of the
worker (an isolated interpreter running the dedicated entry :mod:`factory.cli.agent_child`,
handed a typed request document; the cwd is never on its module path; its result is the
receipt on disk, never its stdout), supervised like every other child: a deadline, and
the whole process tree gone before the attempt returns, also when the worker itself is
killed (the supervisor's guard ends the trees then).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from factory.batch.child_request import AgentChildRequest, child_argv, write_request
from factory.distributed.bundle import (
    BUNDLE_UNREADABLE,
    RECEIPT_NAME,
    REMOTE_SAFETY,
    make_bundle,
    push_bundle,
)
from factory.distributed.payloads import RemoteResult, RemoteTask
from factory.errors import Refused
from factory.gitio.run import run_git, try_git

if TYPE_CHECKING:
    from factory.proc.runner import RunResult

# factory agent's exit codes, as outcomes (2: refused before anything ran)
OUTCOMES = {0: "completed", 3: "rejected", 4: "failed", 130: "interrupted"}
MARGIN_S = 60.0  # beyond the agent's own deadline, for its closing and the teardown


class TaskRefused(Refused):
    """A task the agent refused before running (the same task is refused everywhere)."""


TASK_REFUSED = TaskRefused.define(
    "remote-task-refused", "fix the task (its base, text or scenario) and submit it again"
)


@dataclass(frozen=True, slots=True)
class Attempt:
    """Where one attempt of one task works, and who runs it."""

    task: RemoteTask
    number: int
    folder: Path
    worker: str


def new_attempt(workdir: Path, task: RemoteTask, number: int, worker: str) -> Attempt:
    folder = workdir / "runs" / task.task_id / f"{number}-{secrets.token_hex(4)}"
    folder.mkdir(parents=True)
    return Attempt(task=task, number=number, folder=folder, worker=worker)


def clone(attempt: Attempt) -> Path:
    """A bare clone of the task's remote in the attempt's folder, holding the base."""
    repo = attempt.folder / "repo.git"
    args = [
        *REMOTE_SAFETY,
        "clone",
        "--bare",
        "--quiet",
        "--no-hardlinks",
        "--template=",
        "--upload-pack=git-upload-pack",
        "--",
        attempt.task.remote,
        str(repo),
    ]
    run_git(attempt.folder, args, what="git clone")
    code, out = try_git(repo, ["cat-file", "-t", attempt.task.base_commit])
    if code != 0 or out.strip() != b"commit":
        raise TASK_REFUSED("the base commit is not on the remote")
    return repo


def agent_request(attempt: Attempt, repo: Path, scenario: Path | None) -> AgentChildRequest:
    """What the attempt's child is asked (the typed hand-off, no argv of factory's CLI)."""
    task = attempt.task
    return AgentChildRequest(
        repo=str(repo), base=task.base_commit, task=task.task,
        out=str(attempt.folder / RECEIPT_NAME), timeout_ms=task.timeout_ms,
        worktree_dir=str(attempt.folder / "worktree"), branch="",
        rehearsal=None if scenario is None else str(scenario),
    )  # fmt: skip


def child_env() -> dict[str, str]:
    """The agent child's environment: the supervisor's allow-list, nothing else."""
    from factory.proc.env import pick

    return pick(os.environ)


async def run_attempt(attempt: Attempt) -> RemoteResult:
    """Clone, run the agent cycle, push the bundle; the worker's claim for the task."""
    from factory.proc import RunSpec, run

    repo = clone(attempt)
    scenario = None
    if attempt.task.scenario is not None:
        scenario = attempt.folder / "scenario.json"
        scenario.write_text(attempt.task.scenario, encoding="utf-8")
    request = write_request(attempt.folder, agent_request(attempt, repo, scenario))
    spec = RunSpec(
        argv=child_argv(request),
        env=child_env(),
        timeout_s=attempt.task.timeout_ms / 1000 + MARGIN_S,
        cwd=attempt.folder,
        stdout_overflow="drain",
        stderr_overflow="drain",
    )
    result = await run(spec)
    receipt = attempt.folder / RECEIPT_NAME
    if result.exit_code == 2 and not receipt.exists():
        raise TASK_REFUSED(f"factory agent refused the task (exit 2): {_last_line(result)}")
    try:
        bundle = make_bundle(repo, receipt, attempt.task.task_id)
    except BaseException as exc:
        raise BUNDLE_UNREADABLE(f"no closed receipt after exit {result.exit_code}") from exc
    push_bundle(repo, attempt.task.remote, bundle)
    return RemoteResult(
        task_id=attempt.task.task_id,
        outcome=OUTCOMES.get(result.exit_code, "failed"),  # type: ignore[arg-type]
        ref=bundle.ref,
        bundle=bundle.commit,
        revision=bundle.revision,
        worker=attempt.worker,
        attempt=attempt.number,
    )


def _last_line(result: RunResult) -> str:
    from factory.display import inert

    text = result.err.data.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return inert(lines[-1], limit=300) if lines else "no message"
