"""The batch report, ``DIR/batch-report.json`` (``factory.batch-report/1``), and
``factory batch verify``: every receipt it binds verified again, offline.

The report binds each task's receipt by path (relative to the batch folder) and by
revision, and carries its own revision (RFC 8785 bytes of everything else, domain-separated).
Both engines write it from the journal, so it says the same things whichever ran the tasks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Final, Literal

from pydantic import Field

from factory.batch.journal import JOURNAL_NAME, Journal, now
from factory.errors import IntegrityFailure, UsageError
from factory.fsio import atomic_replace
from factory.models import RevisionedModel, StrictModel

REPORT_SCHEMA: Final = "factory.batch-report/1"
REPORT_NAME = "batch-report.json"
OUTCOMES = ("completed", "rejected", "failed", "interrupted", "refused", "pending")


class BatchInvalid(IntegrityFailure):
    """A batch folder whose report or receipts do not verify (exit 4)."""


REPORT_INVALID = BatchInvalid.define(
    "batch-report-invalid", "the report is not a batch report: rerun the batch to rewrite it"
)


NOT_A_BATCH = UsageError.define(
    "batch-folder-not-found", "name the --out folder of a 'factory batch run'"
)


class TaskGate(StrictModel):
    """The decision gate for the task's candidate (``--test``): accepted, held or failed."""

    state: str
    run: str | None
    head: str | None
    why: str | None


class TaskResult(StrictModel):
    """One task as the batch counts it."""

    id: str
    outcome: str
    state: str
    attempts: int
    receipt: str | None
    revision: str | None
    error: str | None
    worktree: str | None
    branch: str | None
    gate: TaskGate | None = None


class BatchReport(RevisionedModel):
    """``factory.batch-report/1``."""

    REVISION_TAG: ClassVar[str] = REPORT_SCHEMA

    schema_id: Literal["factory.batch-report/1"] = Field(default=REPORT_SCHEMA, alias="schema")
    batch_id: str
    engine: Literal["local", "temporal"]
    route: Literal["subscription", "rehearsal", "api"]
    repository: str
    base_commit: str
    tasks_sha256: str
    created_at: str
    written_at: str
    counts: dict[str, int]
    tasks: list[TaskResult]
    revision: str | None = None


def _relative(path: str | None, folder: Path) -> str | None:
    """The receipt's path relative to the batch folder, or None when no receipt is there:
    a refused or never-started task has a planned path but no receipt, and the report
    names only what exists."""
    if path is None or not os.path.lexists(path):
        return None
    try:
        return os.path.relpath(path, folder)
    except ValueError:
        return path


def build_report(journal: Journal, folder: Path) -> BatchReport:
    meta = journal.meta()
    tasks = [
        TaskResult(
            id=r.id,
            outcome=r.outcome or "pending",
            state=r.state,
            attempts=r.attempts,
            receipt=_relative(r.receipt, folder),
            revision=r.revision,
            error=r.error,
            worktree=r.worktree,
            branch=r.branch,
            gate=None
            if r.gate_state is None
            else TaskGate(state=r.gate_state, run=r.gate_run, head=r.gate_head, why=r.gate_why),
        )
        for r in journal.rows()
    ]
    counts = {name: sum(t.outcome == name for t in tasks) for name in OUTCOMES}
    report = BatchReport(
        batch_id=meta["batch_id"],
        engine=meta["engine"],  # type: ignore[arg-type]
        route=meta["route"],  # type: ignore[arg-type]
        repository=meta["repository"],
        base_commit=meta["base_commit"],
        tasks_sha256=meta["tasks_sha256"],
        created_at=meta["created_at"],
        written_at=now(),
        counts={k: v for k, v in counts.items() if v},
        tasks=tasks,
    )
    return report.closed()


def write_report(journal: Journal, folder: Path) -> BatchReport:
    report = build_report(journal, folder)
    atomic_replace(folder / REPORT_NAME, report.canonical() + b"\n")
    return report


def load_report(folder: Path) -> tuple[BatchReport, bytes]:
    from factory.agent.evidence import read_nofollow
    from factory.models import parse_model

    _is_batch_folder(folder)
    try:
        data = read_nofollow(folder / REPORT_NAME, limit=64 << 20)
    except OSError as exc:
        raise REPORT_INVALID(f"{REPORT_NAME} cannot be read ({exc.strerror or exc})") from None
    import json

    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise REPORT_INVALID(f"{REPORT_NAME} is not JSON") from None
    return parse_model(BatchReport, value, code=REPORT_INVALID, what="the batch report"), data


def _is_batch_folder(folder: Path) -> None:
    """Refuse (exit 2) a folder that holds no batch report, saying which case it is."""
    from factory.display import safe_line

    if os.path.lexists(folder / REPORT_NAME):
        return
    if not folder.is_dir():
        raise NOT_A_BATCH(safe_line(f"{folder} is not a folder"))
    if not (folder / JOURNAL_NAME).exists():
        raise NOT_A_BATCH(safe_line(f"{folder} holds no {REPORT_NAME} or {JOURNAL_NAME}"))
    raise NOT_A_BATCH(
        safe_line(f"{folder} has a journal but no report yet (the batch was cut short)")
        + ": run the same 'factory batch run' command again to resume and write it"
    )


def verify_batch(folder: Path) -> dict[str, Any]:
    """Re-verify the report and every receipt it binds; the findings as a JSON value
    (``factory.batch-verification/1``) with ``ok`` only when everything held."""
    from factory.agent.verify import failed_checks, verify
    from factory.errors import FactoryError

    report, data = load_report(folder)
    problems: list[str] = []
    if report.revision != report.compute_revision():
        problems.append("the report's revision does not match its body")
    if data != report.canonical() + b"\n":
        problems.append("the report's bytes are not its canonical form")
    checked = []
    for task in report.tasks:
        checked_receipt = task.receipt is not None and task.revision is not None
        entry: dict[str, Any] = {
            "id": task.id,
            "outcome": task.outcome,
            "ok": True,
            "receipt_checked": checked_receipt,
        }
        if checked_receipt:
            assert task.receipt is not None
            try:
                result = verify(folder / task.receipt)
                entry["ok"] = result.ok and result.revision.stored == task.revision
                if not result.ok:
                    entry["failed"] = failed_checks(result)
                elif result.revision.stored != task.revision:
                    entry["failed"] = ["the receipt is not the one the report binds"]
            except FactoryError as exc:
                entry.update(ok=False, failed=[f"{exc.code}: {exc.fact}"])
        if not entry["ok"]:
            problems.append(f"task {task.id}: " + "; ".join(entry.get("failed", [])))
        checked.append(entry)
    return {
        "schema": "factory.batch-verification/1",
        "batch": os.fspath(folder),
        "revision": report.revision,
        "tasks": checked,
        "problems": problems,
        "ok": not problems,
    }
