"""``factory batch run`` as one function of typed values: admit everything that can refuse
(tasks file, repository, every base pinned to a commit, the output folder, free space),
open or resume the journal, run the tasks left with the chosen engine, write the report.

Every refusal happens before the first task starts (exit 2, nothing run). After that, every
way out — the last task ended, Ctrl-C, SIGTERM, the batch deadline — leaves each task's
journal row terminal and writes the report.
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import trio

from factory.batch.journal import JOURNAL_NAME, Journal, TaskRow
from factory.batch.local import BatchConfig, LocalEngine, free_bytes
from factory.batch.report import BatchReport, write_report
from factory.batch.screen import HumanScreen, JsonlScreen, Screen
from factory.batch.tasks import BatchTask, load_tasks
from factory.choices import Choices
from factory.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from factory.gitio.repository import Repository

RERUN = frozenset({"pending", "running", "interrupted", "unverified"})


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
        if value is not None and value <= 0:
            raise BAD_LIMIT("deadlines are positive numbers of seconds")
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


def _screen(call: BatchCall, ids: list[str]) -> Screen:
    import sys

    human = call.progress == "human" or (
        call.progress is None and sys.stderr is not None and sys.stderr.isatty()
    )
    return HumanScreen(ids) if human else JsonlScreen()


def todo(rows: list[TaskRow]) -> list[TaskRow]:
    """The tasks to run now: never started, cut short, or ended without a receipt that
    still verifies. A task done with a verified receipt never runs again."""
    from factory.batch.judge import judge

    left = []
    for row in rows:
        rerun = row.state in RERUN or (
            row.state == "done"
            and row.receipt is not None
            and judge(Path(row.receipt), 0).state != "done"
        )
        if rerun:
            left.append(row)
    return left


@dataclass(frozen=True, slots=True)
class Finished:
    report: BatchReport
    exit_code: int
    interrupted: bool
    ran: int


def exit_code_of(report: BatchReport, interrupted: bool) -> int:
    if interrupted:
        return int(ExitCode.INTERRUPTED)
    bad = {"failed", "interrupted", "refused", "pending"}
    if any(t.outcome in bad or (t.gate and t.gate.state == "failed") for t in report.tasks):
        return int(ExitCode.FAILURE)
    if any(t.outcome == "rejected" or (t.gate and t.gate.state == "held") for t in report.tasks):
        return int(ExitCode.REJECTED)
    return int(ExitCode.OK)


def run_batch(call: BatchCall) -> Finished:
    """Admit, open or resume, run, report (see the module docstring)."""
    adm = admit(call)
    out = call.out.absolute()
    out.mkdir(exist_ok=True)
    journal = Journal(out)
    try:
        identity = {
            "repository": os.fspath(adm.common_dir),
            "tasks_sha256": adm.tasks_sha256,
            "base_commit": adm.base_commit,
            "engine": call.engine,
            "route": route_of(call),
        }
        journal.open_batch(identity, adm.tasks, {"batch_id": secrets.token_hex(6)})
        every = journal.rows()
        rows = todo(every)
        screen = _screen(call, [r.id for r in every])
        left = {r.id for r in rows}
        for row in every:
            if row.id not in left:
                screen.earlier(row.id, row.outcome or row.state)
        interrupted = False
        try:
            interrupted = trio.run(_engine_main, adm, journal, screen, rows)
        except KeyboardInterrupt:
            interrupted = True
        except BaseExceptionGroup as group:  # a typed failure raised inside the engine
            from factory.agent.faults import typed_error

            typed = typed_error(group)
            if typed is None:
                raise
            raise typed from None
        finally:
            stop = getattr(screen, "stop", None)
            if stop is not None:
                stop()
            report = write_report(journal, out)
        return Finished(report, exit_code_of(report, interrupted), interrupted, len(rows))
    finally:
        journal.close()


async def _engine_main(
    adm: Admitted, journal: Journal, screen: Screen, rows: list[TaskRow]
) -> bool:
    """Run ``rows``; True when a signal cut the batch short. The batch deadline is no
    interruption: the tasks it stopped are ``interrupted`` in the report, which makes the
    exit 4 (not done as asked), and a rerun resumes them."""
    call = adm.call
    cut = False
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signal() -> None:
                nonlocal cut
                async for _ in signals:
                    cut = True
                    screen.note("stopping: a signal asked the batch to end")
                    nursery.cancel_scope.cancel()

            nursery.start_soon(on_signal)
            with trio.move_on_after(call.deadline_s or float("inf")) as deadline:
                await _run_engine(adm, journal, screen, rows)
                await gate_phase(call, journal, screen)
            if deadline.cancelled_caught:
                screen.note("the batch deadline passed: tasks still running were stopped")
            nursery.cancel_scope.cancel()
    return cut


async def _run_engine(adm: Admitted, journal: Journal, screen: Screen, rows: list[TaskRow]) -> None:
    call = adm.call
    if call.engine == "temporal":
        from factory.batch.remote import run_on_temporal

        await run_on_temporal(adm, journal, screen, rows)
        return
    cfg = BatchConfig(
        repo=call.repo.absolute(),
        out=call.out.absolute(),
        base_commit=adm.base_commit,
        jobs=call.jobs,
        per_login=call.per_login,
        timeout_ms=call.timeout_ms,
        task_deadline_s=call.task_deadline_s,
        rehearsal=call.rehearsal.absolute() if call.rehearsal else None,
        min_free_bytes=call.min_free_mb << 20,
        remove_done=call.remove_done and not call.test_argv,  # else after the gate phase
        credentials=call.credentials.absolute() if call.credentials else None,
        credentials_env=call.credentials_env,
        choices=call.choices,
    )
    await LocalEngine(cfg, journal, screen, adm.bases).run(rows)


async def gate_phase(call: BatchCall, journal: Journal, screen: Screen) -> None:
    """``--test`` (and ``--review``): for every approved task whose gate has not accepted
    yet, one after the other, the review transaction when asked, then the decision gate (a
    resumed batch resumes the same lineages and gate runs). ``--remove-done`` removes the
    worktrees after this phase, since the review and the tests run in them."""
    from factory.batch.gating import gate_task
    from factory.batch.local import remove_worktree
    from factory.batch.reviewing import review_task

    if not call.test_argv:
        return
    out = call.out.absolute()
    for row in journal.rows():
        if row.state != "done" or row.outcome != "completed" or row.gate_state == "accepted":
            continue
        assert row.receipt is not None
        receipt = Path(row.receipt)
        if call.review:
            screen.progress(row.id, {"stage": "review transaction"})
            if row.worktree is None or not Path(row.worktree).is_dir():
                journal.set_gate(row.id, "held", None, None, "review: the worktree is gone")
                continue
            reviewed = await review_task(
                Path(row.worktree), list(call.test_argv), rehearsal=call.rehearsal is not None,
                incidents=out / "review-incidents",
            )  # fmt: skip
            screen.note(f"{row.id}: review {reviewed.state}")
            if reviewed.state != "approved":
                state = "failed" if reviewed.state == "failed" else "held"
                journal.set_gate(row.id, state, None, None, f"review: {reviewed.why}")
                continue
        export = receipt.parent / f"gate-{len(list(receipt.parent.glob('gate-*'))) + 1}"
        screen.progress(row.id, {"stage": "decision gate"})
        work = functools.partial(
            gate_task,
            receipt,
            list(call.test_argv),
            out / "gate.sqlite3",
            rehearsal=call.rehearsal is not None,
            export_to=export,
        )
        result = await trio.to_thread.run_sync(work)
        journal.set_gate(row.id, result.state, result.run, result.head, result.why)
        screen.note(f"{row.id}: decision gate {result.state}")
    if call.remove_done:
        for row in journal.rows():
            if row.state == "done" and row.receipt is not None:
                await trio.to_thread.run_sync(remove_worktree, Path(row.receipt), screen.note)
