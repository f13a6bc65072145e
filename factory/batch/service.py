"""``factory batch run`` as one function of typed values: admit everything that can refuse
(tasks file, repository, every base pinned to a commit, the output folder, free space),
open or resume the journal, run the tasks left with the chosen engine, write the report.
The admission itself is :mod:`factory.batch.admission`.

Every refusal happens before the first task starts (exit 2, nothing run). After that, every
way out — the last task ended, Ctrl-C, SIGTERM, the batch deadline — leaves each task's
journal row terminal and writes the report.
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
from dataclasses import dataclass
from pathlib import Path

import trio

from factory.batch.admission import Admitted, BatchCall, admit, route_of
from factory.batch.journal import Journal, TaskRow
from factory.batch.local import BatchConfig, LocalEngine
from factory.batch.report import BatchReport, write_report
from factory.batch.screen import HumanScreen, JsonlScreen, Screen
from factory.errors import ExitCode

RERUN = frozenset({"pending", "running", "interrupted", "unverified"})


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
            screen.note(_said(f"{row.id}: review {reviewed.state}", reviewed.why))
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
        screen.note(_said(f"{row.id}: decision gate {result.state}", result.why))
    if call.remove_done:
        for row in journal.rows():
            if row.state == "done" and row.receipt is not None:
                await trio.to_thread.run_sync(remove_worktree, Path(row.receipt), screen.note)


def _said(headline: str, why: str | None) -> str:
    """A progress note with the first line of its reason (the screen makes it inert and
    cuts it; the whole reason is the report's ``gate.why``)."""
    if why is None:
        return headline
    first, _, rest = why.partition("\n")
    return f"{headline}: {first}" + (" (more in the report's gate.why)" if rest else "")
