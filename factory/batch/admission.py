"""``factory batch run``'s admission: every check that can refuse a batch (the limits,
the tasks, the repository, every base pinned to a commit once, the output folder, free
space, the Temporal flags, the providers), run before anything is created (exit 2).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from factory.batch.journal import JOURNAL_NAME, Journal
from factory.batch.local import free_bytes
from factory.batch.tasks import BatchTask, load_tasks
from factory.choices import Choices
from factory.errors import UsageError

if TYPE_CHECKING:
    from factory.gitio.repository import Repository


class BatchRefused(UsageError):
    """The batch cannot start as asked (nothing ran)."""


DISK_FLOOR = BatchRefused.define(
    "batch-disk-floor", "free some space, or lower --min-free-mb, then run the same command again"
)
OUT_UNUSABLE = BatchRefused.define("batch-out-unusable", "give --out a folder factory can create")
BAD_LIMIT = BatchRefused.define("batch-limit-invalid", "see 'factory batch run --help'")
ENGINE_FLAGS = BatchRefused.define(
    "batch-engine-flags", "add --engine temporal, or drop the Temporal flags"
)
REVIEW_BOUNDARY = BatchRefused.define(
    "batch-review-boundary",
    "give the repository the remote its review is measured against, with its default "
    "branch fetched here (git remote add origin URL; git fetch origin), or run without "
    "--review",
)
TASKS_SOURCE = BatchRefused.define(
    "batch-tasks-source", "give either a TASKS file or --from-forge OWNER/NAME"
)


@dataclass(frozen=True, slots=True)
class BatchCall:
    """``factory batch run``'s flags as values."""

    tasks: Path | None
    repo: Path
    out: Path
    jobs: int = 2
    per_login: int = 1
    base: str | None = None
    rehearsal: Path | None = None
    timeout_ms: int = 600_000
    task_deadline_s: float | None = None
    deadline_s: float | None = None
    min_free_mb: int = 1024
    remove_done: bool = False
    progress: Literal["human", "jsonl"] | None = None
    engine: Literal["local", "temporal"] = "local"
    temporal: str | None = None
    task_queue: str | None = None
    remote: str | None = None
    test_argv: tuple[str, ...] | None = None
    review: bool = False
    credentials: Path | None = None
    credentials_env: str | None = None
    choices: Choices = field(default_factory=Choices)
    from_forge: str | None = None
    label: str = "factory"
    forge_url: str | None = None


@dataclass(frozen=True, slots=True)
class Admitted:
    call: BatchCall
    tasks: list[BatchTask]
    tasks_sha256: str
    common_dir: Path
    base_commit: str
    bases: dict[str, str]
    remote_url: str | None = None


def admit(call: BatchCall) -> Admitted:
    """Every check that can refuse, nothing created."""
    from factory.gitio.repository import locate_repository, resolve_base

    if not 1 <= call.jobs <= 64 or not 1 <= call.per_login <= 64:
        raise BAD_LIMIT("--jobs and --per-login take 1 to 64")
    if call.min_free_mb < 0:
        raise BAD_LIMIT("--min-free-mb cannot be negative")
    for value in (call.deadline_s, call.task_deadline_s):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise BAD_LIMIT("deadlines are positive, finite numbers of seconds")
    from factory import credentials

    keys = credentials.load(call.credentials, call.credentials_env, os.environ)
    if keys is not None and call.rehearsal is not None:
        raise credentials.CREDENTIALS_INVALID("the rehearsal route takes no credentials")
    if call.choices != Choices() and call.engine == "temporal":
        raise BAD_LIMIT(
            "--model, --reviewer-model, --max-turns and --max-budget-usd are for the local"
            " engine: Temporal workers run with their own settings"
        )
    if keys is not None and call.engine == "temporal":
        raise credentials.CREDENTIALS_INVALID("workers hold their own credentials; none travel")
    if call.rehearsal is not None:
        from factory.rehearsal import load_scenario

        load_scenario(call.rehearsal)  # a bad scenario is refused here, before anything
    tasks, digest = _tasks_of(call)
    repo = locate_repository(call.repo)
    base_commit, _ = resolve_base(repo, call.base)
    bases = {t.id: _task_base(repo, t) if t.base else base_commit for t in tasks}
    out = call.out.absolute()
    if out.exists() and not out.is_dir():
        raise OUT_UNUSABLE("--out exists and is not a folder")
    if not out.exists() and not out.parent.is_dir():
        raise OUT_UNUSABLE("the folder holding --out does not exist")
    where = out if out.exists() else out.parent
    _probe_writable(where)
    if free_bytes(where, Path(os.path.realpath(call.repo)).parent) < call.min_free_mb << 20:
        raise DISK_FLOOR(f"less than {call.min_free_mb} MB free for the batch or its worktrees")
    remote_url = None
    if call.engine != "temporal" and (call.temporal or call.remote or call.task_queue):
        raise ENGINE_FLAGS("--temporal, --task-queue and --remote are for --engine temporal")
    if call.engine == "temporal":
        from factory.batch.remote import TEMPORAL_REQUIRED, resolve_remote
        from factory.cli.worker_cmd import check_address

        if call.temporal is None:
            raise TEMPORAL_REQUIRED("--engine temporal needs --temporal")
        check_address(call.temporal)
        remote_url = resolve_remote(repo.common_dir, call.remote)
    if call.review:
        _review_boundary(repo)
    if call.engine == "local":
        _preflight(route_of(call))  # last: every refusal of the flags comes first
    return Admitted(call, tasks, digest, repo.common_dir, base_commit, bases, remote_url)


def _task_base(repo: Repository, task: BatchTask) -> str:
    """The commit a task's own ``base`` names; a bad one is blamed on that task, not on
    ``--base`` (the error keeps its code, the message names the task)."""
    from factory.errors import FactoryError
    from factory.gitio.repository import resolve_base

    try:
        return resolve_base(repo, task.base)[0]
    except FactoryError as exc:
        fact = exc.fact.replace("--base", f"task {task.id}'s base")
        raise type(exc)(f"task {task.id}: base {task.base!r}: {fact}", code=exc.spec) from None


def _review_boundary(repo: Repository) -> None:
    """``--review`` ends each task with the pre-pr review gate, which measures the change
    against the default branch of the push remote. Without that boundary every task would
    be held there, after its spend; the batch is refused before anything runs instead."""
    from factory.gitio.worktree import Worktree
    from factory.review.gates.boundary import select_boundary

    # select_boundary reads the configuration and the remote from the folder alone.
    here = Worktree(root=repo.start, git_dir=repo.common_dir, common_dir=repo.common_dir)
    _, problem = select_boundary(here, None)
    if problem is not None:
        raise REVIEW_BOUNDARY(problem.reason.split(" (next: ")[0])


def _preflight(route: str) -> None:
    """The provider preflight ``factory agent`` makes, once for the whole batch: a provider
    that could not start (not found, no login on the subscription route) refuses the batch
    here (``provider-not-ready``, exit 2, nothing created) instead of every task."""
    from factory.cli.agent_exec import load_profiles
    from factory.cli.preflight import preflight

    preflight(*load_profiles(), route=route)  # type: ignore[arg-type]


def _probe_writable(where: Path) -> None:
    """Refuse a batch folder factory cannot create (read-only, not permitted, a pseudo file
    system) before the free-space check could misname it: one private folder made and
    removed at once."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".factory-probe-", dir=where))
    except OSError as exc:
        raise OUT_UNUSABLE(f"cannot create a folder in {where} ({exc.strerror or exc})") from None


def route_of(call: BatchCall) -> str:
    if call.rehearsal is not None:
        return "rehearsal"
    return "api" if call.credentials or call.credentials_env else "subscription"


def _tasks_of(call: BatchCall) -> tuple[list[BatchTask], str]:
    """The tasks and what identifies their source: the file's SHA-256, or for the forge
    its repository and label (a resumed forge batch runs the tasks it started with, from
    its journal, without reading the forge again)."""
    if (call.tasks is None) == (call.from_forge is None):
        raise TASKS_SOURCE("name a TASKS file or --from-forge OWNER/NAME (one of the two)")
    if call.tasks is not None:
        return load_tasks(call.tasks)
    assert call.from_forge is not None
    source = f"forge:{call.from_forge}:{call.label}"
    journal_path = call.out.absolute() / JOURNAL_NAME
    if journal_path.exists():
        journal = Journal(call.out.absolute())
        try:
            return [row.spec for row in journal.rows()], source
        finally:
            journal.close()
    from factory.batch.forge_tasks import forge_tasks

    return forge_tasks(call.from_forge, call.label, call.forge_url)[0], source
