"""The local engine: every task a supervised child process, under one overall cap and one
per provider login, with deadlines, a free-space floor and a terminal journal row for every
way out (SPEC M-2).

Each attempt runs as a child of this process through factory's supervisor: the dedicated
entry :mod:`factory.cli.agent_child`, handed a typed request document
(:mod:`factory.batch.child_request`) — never factory's CLI, never a parsed stdout — in an
isolated interpreter (the current folder is never on its module path), with the
allow-listed environment, a deadline, and the whole process tree gone before the attempt
returns, also when the batch is cancelled or killed. The attempt's receipt is then
verified here, with the receipt verifier; only a receipt that verifies makes the task
``done``. The child's progress lines (``factory.agent-progress/1`` on its stderr, spooled
to a file) feed the screen.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import trio

from factory.batch.child_request import AgentChildRequest, child_argv, with_choices, write_request
from factory.batch.journal import Journal, TaskRow
from factory.batch.screen import Screen
from factory.choices import Choices

if TYPE_CHECKING:
    from factory.batch.judge import Judged

MARGIN_S = 60.0  # past the agent's own deadline: its closing, then the supervisor's teardown
POLL_S = 0.5
CHILD_ENV = (
    *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"),
    *("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "FACTORY_STATE_DIR"),
)
Route = Literal["subscription", "rehearsal", "api"]
Spawn = Callable[["BatchConfig", TaskRow, Path, str], Awaitable[int | None]]
JudgeFn = Callable[[Path, int | None, str | None], "Judged"]


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """What ``factory batch run`` was asked, decided before anything runs."""

    repo: Path
    out: Path
    base_commit: str
    jobs: int = 2
    per_login: int = 1
    timeout_ms: int = 600_000
    task_deadline_s: float | None = None
    rehearsal: Path | None = None
    min_free_bytes: int = 1 << 30
    remove_done: bool = False
    credentials: Path | None = None
    credentials_env: str | None = None
    choices: Choices = field(default_factory=Choices)

    @property
    def route(self) -> Route:
        if self.rehearsal is not None:
            return "rehearsal"
        api = self.credentials is not None or self.credentials_env is not None
        return "api" if api else "subscription"


@dataclass
class Tally:
    """What the engine saw while it ran (the journal holds the same)."""

    running: int = 0
    most: int = 0
    stopped_for_disk: bool = False
    ended: dict[str, str] = field(default_factory=dict)


def free_bytes(*folders: Path) -> int:
    """The least free space among ``folders`` (the batch folder, the worktrees' folder)."""
    return min(shutil.disk_usage(f).free for f in folders)


def agent_request(cfg: BatchConfig, row: TaskRow, receipt: Path, base: str) -> AgentChildRequest:
    """What the attempt's child is asked (the typed hand-off; no argv of factory's CLI)."""

    def text(path: Path | None) -> str | None:
        return None if path is None else os.fspath(path)

    request = AgentChildRequest(
        repo=os.fspath(cfg.repo), base=base, task=row.spec.task,
        out=os.fspath(receipt), timeout_ms=cfg.timeout_ms,
        rehearsal=text(cfg.rehearsal), credentials=text(cfg.credentials),
        credentials_env=cfg.credentials_env,
    )  # fmt: skip
    return with_choices(request, cfg.choices)


def last_progress(spool: Path, seen: int) -> tuple[dict[str, object] | None, int]:
    """The newest complete progress line after byte ``seen`` of the child's stderr spool."""
    try:
        with open(spool, "rb") as f:
            f.seek(seen)
            data = f.read(1 << 20)
    except OSError:
        return None, seen
    end = data.rfind(b"\n")
    if end < 0:
        return None, seen
    latest, verdict = None, None
    for line in data[:end].split(b"\n"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("schema") == "factory.agent-progress/1":
            latest, verdict = value, value.get("verdict") or verdict
    if latest is not None and verdict and not latest.get("verdict"):
        latest = {**latest, "verdict": verdict}  # a verdict between two polls stays shown
    return latest, seen + end + 1


async def run_child(cfg: BatchConfig, row: TaskRow, receipt: Path, base: str) -> int | None:
    """One attempt as a supervised child: its exit code, or None when the supervisor
    stopped it (its deadline, a launch failure). The process tree is gone on return."""
    from factory.proc import RunSpec, pick, run

    folder = receipt.parent
    request = write_request(folder, agent_request(cfg, row, receipt, base))
    spec = RunSpec(
        argv=child_argv(request),
        env=pick(os.environ, (*CHILD_ENV, *([cfg.credentials_env] if cfg.credentials_env else []))),
        timeout_s=(cfg.task_deadline_s or cfg.timeout_ms / 1000) + MARGIN_S,
        cwd=folder,
        stdout_spool=folder / "agent-stdout.json",
        stderr_spool=folder / "agent-stderr.jsonl",
        stdout_overflow="drain",
        stderr_overflow="drain",
    )
    try:
        return (await run(spec)).exit_code
    except Exception as exc:  # the supervisor's typed failure (timeout, launch): no code
        with open(folder / "agent-stderr.jsonl", "a", encoding="utf-8") as err:
            err.write(
                f"factory: {getattr(exc, 'code', type(exc).__name__)}: the supervisor stopped it\n"
            )
        return None


def last_said(spool: Path) -> str | None:
    """The child's last diagnostic line (``factory: <code>: …``), inert, or None."""
    from factory.display import inert

    try:
        with open(spool, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [ln for ln in tail.splitlines() if ln.startswith("factory: ")]
    return inert(lines[-1], limit=300) if lines else None


class LocalEngine:
    """Runs the tasks it is given; :meth:`run` returns when every one ended or was left."""

    def __init__(
        self,
        cfg: BatchConfig,
        journal: Journal,
        screen: Screen,
        bases: dict[str, str],
        *,
        spawn: Spawn | None = None,
        judge: JudgeFn | None = None,
    ):
        from factory.batch.judge import judge as judge_receipt

        self.spawn: Spawn = spawn or run_child
        self.judge: JudgeFn = judge or judge_receipt
        self.cfg = cfg
        self.journal = journal
        self.screen = screen
        self.bases = bases  # task id → pinned base commit
        self.overall = trio.CapacityLimiter(cfg.jobs)
        limit = cfg.per_login if cfg.route == "subscription" else cfg.jobs
        self.login = trio.CapacityLimiter(limit)  # one login per route on this machine
        self.tally = Tally()

    async def run(self, rows: list[TaskRow]) -> Tally:
        async with trio.open_nursery() as nursery:
            for row in rows:
                nursery.start_soon(self._one, row)
        return self.tally

    async def _one(self, row: TaskRow) -> None:
        """One task: its slots are held while its child runs, and released before its
        receipt is judged, so the next task's child starts while this one is checked."""
        async with self.login, self.overall:
            if self.tally.stopped_for_disk:
                return
            worktrees = self.cfg.repo.resolve().parent
            if free_bytes(self.cfg.out, worktrees) < self.cfg.min_free_bytes:
                self.tally.stopped_for_disk = True
                self.screen.note("free space is under the floor: no more tasks start")
                return
            receipt, code = await self._attempt(row)
        # Bounded work (one receipt verified, perhaps one worktree removed), shielded so
        # that a signal arriving now still leaves the row terminal with its real outcome.
        with trio.CancelScope(shield=True):
            await self._close(row, receipt, code)

    def _counted(self, delta: int) -> int:
        self.tally.running += delta
        self.tally.most = max(self.tally.most, self.tally.running)
        return self.tally.running

    async def _attempt(self, row: TaskRow) -> tuple[Path, int | None]:
        """Run the task's child; its receipt and exit code once it has exited."""
        folder = self.cfg.out / "tasks" / row.id / f"attempt-{row.attempts + 1}"
        folder.mkdir(parents=True)
        receipt = folder / "receipt.json"
        attempt = self.journal.start(row.id, os.fspath(receipt), self._counted(+1))
        self.screen.started(row.id, attempt)
        ended = False
        try:
            async with trio.open_nursery() as watch:
                watch.start_soon(self._follow, row.id, folder / "agent-stderr.jsonl")
                code = await self.spawn(self.cfg, row, receipt, self.bases[row.id])
                watch.cancel_scope.cancel()
            self._counted(-1)  # the child has exited: no longer running
            ended = True
            return receipt, code
        finally:
            if not ended:
                with trio.CancelScope(shield=True):
                    self.journal.end(row.id, state="interrupted", outcome="interrupted",
                                     revision=None, error="the batch was interrupted",
                                     running=self._counted(-1))  # fmt: skip
                    self.screen.ended(row.id, "interrupted")

    async def _follow(self, task_id: str, spool: Path) -> None:
        seen = 0
        try:
            while True:
                await trio.sleep(POLL_S)
                seen = self._show(task_id, spool, seen)
        finally:
            self._show(task_id, spool, seen)  # the lines written since the last poll

    def _show(self, task_id: str, spool: Path, seen: int) -> int:
        latest, seen = last_progress(spool, seen)
        if latest is not None:
            self.screen.progress(task_id, latest)
        return seen

    async def _close(self, row: TaskRow, receipt: Path, code: int | None) -> None:
        said = last_said(receipt.parent / "agent-stderr.jsonl")
        verdict = await trio.to_thread.run_sync(self.judge, receipt, code, said)
        self.journal.end(
            row.id,
            state=verdict.state,
            outcome=verdict.outcome,
            revision=verdict.revision,
            error=verdict.error,
            running=self.tally.running,
            worktree=verdict.worktree,
            branch=verdict.branch,
        )
        self.tally.ended[row.id] = verdict.outcome
        self.screen.ended(row.id, verdict.outcome)
        if self.cfg.remove_done and verdict.state == "done":
            await trio.to_thread.run_sync(remove_worktree, receipt, self.screen.note)


def remove_worktree(receipt: Path, note: Callable[[str], None]) -> None:
    """``--remove-done``: the worktree goes, under ``worktree remove``'s checks; the branch,
    the receipt and the evidence stay."""
    from factory.agent.worktree_remove import remove_created_worktree
    from factory.errors import FactoryError

    try:
        remove_created_worktree(receipt)
    except FactoryError as exc:
        note(f"worktree of {receipt.parent.parent.name} kept: {exc.code}")
