"""The batch journal, ``DIR/batch.sqlite3``: what each task is, what ran, how it ended.

One row per task (its spec as canonical JSON, its state, its attempts, the receipt of its
last attempt and what verifying it showed) and one row per supervisor event (a task
started or ended, with the number then running: the record the concurrency cap is checked
against). Every change is one transaction; SQLite's journal makes a batch killed with
SIGKILL resume from the last committed change.

States: ``pending`` (not started), ``running`` (started, not ended: after a crash, rerun),
``interrupted`` (cancelled: rerun), ``done`` (ended with a receipt that verified: never
rerun while that receipt still verifies), ``unverified`` (ended without a receipt that
verifies: rerun).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from factory.batch.tasks import BatchTask
from factory.errors import UsageError

JOURNAL_NAME = "batch.sqlite3"
SCHEMA_VERSION = "1"
_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL, spec TEXT NOT NULL,
    state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    receipt TEXT, revision TEXT, outcome TEXT, error TEXT, worktree TEXT, branch TEXT,
    started_at TEXT, ended_at TEXT, worker TEXT,
    gate_state TEXT, gate_run TEXT, gate_head TEXT, gate_why TEXT
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, task TEXT NOT NULL,
    event TEXT NOT NULL, running INTEGER NOT NULL, detail TEXT
);
"""


class JournalRefused(UsageError):
    """The folder holds another batch's journal (nothing ran)."""


BATCH_MISMATCH = JournalRefused.define(
    "batch-mismatch",
    "resume with the same tasks file and repository, or give --out a new folder",
)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One task as the journal holds it."""

    id: str
    position: int
    spec: BatchTask
    state: str
    attempts: int
    receipt: str | None
    revision: str | None
    outcome: str | None
    error: str | None
    worktree: str | None
    branch: str | None
    worker: str | None
    gate_state: str | None = None
    gate_run: str | None = None
    gate_head: str | None = None
    gate_why: str | None = None


class Journal:
    """An open journal (one connection, used from one thread at a time)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db = sqlite3.connect(folder / JOURNAL_NAME, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_TABLES)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta").fetchall())

    def open_batch(
        self, identity: dict[str, str], tasks: list[BatchTask], fresh: dict[str, str]
    ) -> bool:
        """Record a new batch, or check that this folder holds the same one; True when it
        was new. ``identity`` (repository, tasks digest, base, engine…) must match; ``fresh``
        (the batch id) is recorded only when the batch is new."""
        with self._tx() as db:
            have = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if have:
                differs = [k for k, v in identity.items() if have.get(k) != v]
                if differs:
                    raise BATCH_MISMATCH(
                        f"--out holds a batch with another {', '.join(sorted(differs))}"
                    )
                return False
            rows = [("schema_version", SCHEMA_VERSION), ("created_at", now())]
            rows += [*identity.items(), *fresh.items()]
            db.executemany("INSERT INTO meta VALUES (?, ?)", rows)
            db.executemany(
                "INSERT INTO tasks (id, position, spec, state) VALUES (?, ?, ?, 'pending')",
                [
                    (t.id, i, json.dumps(t.to_json_value(), sort_keys=True))
                    for i, t in enumerate(tasks)
                ],
            )
            return True

    def rows(self) -> list[TaskRow]:
        cur = self.db.execute(
            "SELECT id, position, spec, state, attempts, receipt, revision, outcome, error,"
            " worktree, branch, worker, gate_state, gate_run, gate_head, gate_why"
            " FROM tasks ORDER BY position"
        )
        return [
            TaskRow(r[0], r[1], BatchTask.model_validate_json(r[2]), *r[3:]) for r in cur.fetchall()
        ]

    def start(
        self, task_id: str, receipt: str, running: int, worker: str = "local", *, count: int = 1
    ) -> int:
        """Mark the task started; the attempts so far. ``count=0``: a submission that may
        attach to work already under way (the Temporal engine counts the attempts its
        workers made, :meth:`add_attempts`, once it has them)."""
        with self._tx() as db:
            db.execute(
                "UPDATE tasks SET state='running', attempts=attempts+?, receipt=?, revision=NULL,"
                " outcome=NULL, error=NULL, started_at=?, ended_at=NULL, worker=?,"
                " gate_state=NULL, gate_run=NULL, gate_head=NULL, gate_why=NULL WHERE id=?",
                (count, receipt, now(), worker, task_id),
            )
            db.execute(
                "INSERT INTO events (at, task, event, running) VALUES (?, ?, 'started', ?)",
                (now(), task_id, running),
            )
            (attempt,) = db.execute("SELECT attempts FROM tasks WHERE id=?", (task_id,)).fetchone()
        return int(attempt)

    def end(
        self,
        task_id: str,
        *,
        state: str,
        outcome: str | None,
        revision: str | None,
        error: str | None,
        running: int,
        worktree: str | None = None,
        branch: str | None = None,
    ) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE tasks SET state=?, outcome=?, revision=?, error=?, ended_at=?,"
                " worktree=COALESCE(?, worktree), branch=COALESCE(?, branch) WHERE id=?",
                (state, outcome, revision, error, now(), worktree, branch, task_id),
            )
            db.execute(
                "INSERT INTO events (at, task, event, running, detail)"
                " VALUES (?, ?, 'ended', ?, ?)",
                (now(), task_id, running, state),
            )

    def set_gate(
        self, task_id: str, state: str, run: str | None, head: str | None, why: str | None
    ) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE tasks SET gate_state=?, gate_run=?, gate_head=?, gate_why=? WHERE id=?",
                (state, run, head, why, task_id),
            )

    def add_attempts(self, task_id: str, count: int) -> None:
        """Count ``count`` attempts made elsewhere (a Temporal worker's retries)."""
        with self._tx() as db:
            db.execute("UPDATE tasks SET attempts=attempts+? WHERE id=?", (count, task_id))

    def set_receipt(self, task_id: str, receipt: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE tasks SET receipt=? WHERE id=?", (receipt, task_id))

    def max_running(self) -> int:
        """The most tasks ever running at once, from the supervisor's own events."""
        (value,) = self.db.execute("SELECT COALESCE(MAX(running), 0) FROM events").fetchone()
        return int(value)
