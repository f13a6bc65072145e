"""``factory batch run --engine temporal``: the same batch, its tasks run by Temporal
workers (:mod:`factory.distributed`), the same journal rows and report.

The tasks left are submitted as one workflow (attaching to it when the same submission was
made before); each task counts only once its bundle was fetched from the remote and its
receipt verified here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from factory.batch.journal import Journal, TaskRow
from factory.batch.screen import Screen
from factory.errors import UsageError

if TYPE_CHECKING:
    from factory.batch.admission import Admitted

DEFAULT_QUEUE = "factory"
REMOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class RemoteRefused(UsageError):
    """The batch names no remote the workers could clone (nothing was submitted)."""


REMOTE_UNKNOWN = RemoteRefused.define(
    "batch-remote-unknown",
    "give --remote a configured remote's name or a URL every worker can clone and push to",
)
TEMPORAL_REQUIRED = RemoteRefused.define(
    "batch-temporal-required", "give the Temporal server with --temporal HOST:PORT"
)


def resolve_remote(common_dir: Path, remote: str | None) -> str:
    """The URL of ``remote`` (a configured remote's name, default ``origin``, read as it is
    written: no ``insteadOf`` rewriting), or ``remote`` itself when it is a URL or a path."""
    from factory.gitio.run import try_git

    name = remote or "origin"
    if REMOTE_NAME.fullmatch(name) and not os.path.isabs(name):
        code, out = try_git(common_dir, ["config", "--get", f"remote.{name}.url"])
        url = out.decode("utf-8", "replace").strip()
        if code == 0 and url:
            return url
        if remote is None or not os.path.exists(name):
            raise REMOTE_UNKNOWN(f"no remote named {name!r} is configured")
    return name


async def run_on_temporal(
    adm: Admitted, journal: Journal, screen: Screen, rows: list[TaskRow]
) -> None:
    from factory.distributed.coordinator import run_remote, workflow_id
    from factory.distributed.payloads import RemoteBatch, RemoteTask

    call = adm.call
    assert call.temporal is not None and adm.remote_url is not None  # admitted
    address, url = call.temporal, adm.remote_url
    scenario = call.rehearsal.read_text(encoding="utf-8") if call.rehearsal else None
    tasks = tuple(
        RemoteTask(
            task_id=r.id,
            task=r.spec.task,
            remote=url,
            base_commit=adm.bases[r.id],
            task_queue=r.spec.queue or call.task_queue or DEFAULT_QUEUE,
            scenario=scenario,
            test_argv=tuple(r.spec.test or ()),
            timeout_ms=call.timeout_ms,
        )
        for r in rows
    )
    if not tasks:
        return
    batch = RemoteBatch(batch_id=journal.meta()["batch_id"], tasks=tasks)
    for number, row in enumerate(rows, start=1):
        journal.start(row.id, "", number, worker="temporal", count=0)
        screen.started(row.id, row.attempts + 1)
    token = trio.lowlevel.current_trio_token()

    def progress(done: dict[str, str]) -> None:  # called from the SDK's thread
        for task_id, outcome in done.items():
            event = {"stage": f"worker reported {outcome}; fetching"}
            trio.from_thread.run_sync(screen.progress, task_id, event, trio_token=token)

    def notice(text: str) -> None:  # called from the SDK's thread
        trio.from_thread.run_sync(screen.note, text, trio_token=token)

    ended = False
    try:
        counted = await run_remote(
            address,
            call.task_queue or DEFAULT_QUEUE,
            batch,
            out=call.out.absolute(),
            progress=progress,
            notice=notice,
        )
        for item in counted:
            receipt = item.checked.receipt if item.checked is not None else None
            if receipt is not None:
                journal.set_receipt(item.claim.task_id, os.fspath(receipt))
            journal.add_attempts(item.claim.task_id, max(item.claim.attempt, 1))
            verified = item.checked is not None and item.checked.ok
            state = "done" if verified and item.outcome != "interrupted" else "unverified"
            if verified and item.outcome == "interrupted":
                state = "interrupted"
            journal.end(
                item.claim.task_id,
                state=state,
                outcome=item.outcome,
                revision=item.checked.revision if item.checked is not None else None,
                error=item.reason,
                running=0,
            )
            screen.ended(item.claim.task_id, item.outcome)
        ended = True
    finally:
        if not ended:
            screen.note(
                "the coordinator stopped waiting; the workflow goes on in Temporal and its"
                " workers: run the same command to attach (nothing reruns), or cancel it"
                f" with 'temporal workflow cancel' ({workflow_id(batch)})"
            )
            with trio.CancelScope(shield=True):
                for row in rows:
                    journal.end(row.id, state="interrupted", outcome="interrupted", revision=None,
                                error="the coordinator stopped waiting; the workflow goes on",
                                running=0)  # fmt: skip
