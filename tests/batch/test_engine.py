"""The local engine's scheduling, on trio's MockClock with scripted attempts: the caps,
the per-login cap, deadlines, the journal's terminal rows, the outcomes of every kind."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from factory.batch.journal import Journal, TaskRow
from factory.batch.judge import Judged
from factory.batch.local import BatchConfig, LocalEngine
from factory.batch.screen import JsonlScreen
from factory.batch.tasks import BatchTask

BASE = "a" * 40


def _journal(tmp: Path, count: int) -> tuple[Journal, list[TaskRow]]:
    journal = Journal(tmp)
    tasks = [BatchTask(id=f"t{i:02d}", task=f"task {i}") for i in range(count)]
    journal.open_batch({"repository": "r"}, tasks, {"batch_id": "b"})
    return journal, journal.rows()


class Script:
    """Attempts that take ``seconds[id]`` (forever when absent) and end with ``codes[id]``."""

    def __init__(self, seconds: dict[str, float], outcomes: dict[str, str] | None = None):
        self.seconds = seconds
        self.outcomes = outcomes or {}
        self.running = 0
        self.most = 0

    async def spawn(self, cfg: BatchConfig, row: TaskRow, receipt: Path, base: str) -> int | None:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await trio.sleep(self.seconds.get(row.id, float("inf")))
        finally:
            self.running -= 1
        receipt.write_text("{}")
        return 0

    def judge(self, receipt: Path, code: int | None, said: str | None) -> Judged:
        task = receipt.parent.parent.name
        outcome = self.outcomes.get(task, "completed")
        state = {"refused": "refused", "unverified": "unverified"}.get(outcome, "done")
        return Judged(state, "failed" if outcome == "unverified" else outcome, None, None)


def _cfg(tmp: Path, **kw: object) -> BatchConfig:
    fields: dict[str, object] = {"repo": tmp, "out": tmp, "base_commit": BASE, "min_free_bytes": 0}
    fields.update(kw)
    return BatchConfig(**fields)  # type: ignore[arg-type]


async def _run(tmp: Path, script: Script, count: int, **kw: object) -> Journal:
    journal, rows = _journal(tmp, count)
    engine = LocalEngine(
        _cfg(tmp, **kw), journal, JsonlScreen(trio.current_time), {r.id: BASE for r in rows},
        spawn=script.spawn, judge=script.judge,
    )  # fmt: skip
    await engine.run(rows)
    return journal


async def test_never_more_than_jobs_at_once(tmp_path: Path, autojump_clock: object) -> None:
    script = Script({f"t{i:02d}": 1 + i % 4 for i in range(12)})
    journal = await _run(tmp_path, script, 12, jobs=3, rehearsal=tmp_path)
    assert script.most == 3 and journal.max_running() == 3  # the supervisor's own record
    assert {r.state for r in journal.rows()} == {"done"}


async def test_one_login_runs_one_task_at_a_time(tmp_path: Path, autojump_clock: object) -> None:
    script = Script({f"t{i:02d}": 1 for i in range(4)})
    journal = await _run(tmp_path, script, 4, jobs=3, per_login=1)  # subscription route
    assert script.most == 1 and journal.max_running() == 1
    twin = Script({f"t{i:02d}": 1 for i in range(4)})  # negative control: two logins' worth
    (tmp_path / "twin").mkdir()
    await _run(tmp_path / "twin", twin, 4, jobs=3, per_login=2)
    assert twin.most == 2


async def test_a_batch_deadline_leaves_every_row_terminal(
    tmp_path: Path, autojump_clock: object
) -> None:
    script = Script({"t00": 5, "t01": 5})  # t02 and t03 hang
    journal, rows = _journal(tmp_path, 4)
    engine = LocalEngine(
        _cfg(tmp_path, jobs=4, rehearsal=tmp_path), journal, JsonlScreen(trio.current_time),
        {r.id: BASE for r in rows}, spawn=script.spawn, judge=script.judge,
    )  # fmt: skip
    with trio.move_on_after(60):
        await engine.run(rows)
    states = {r.id: r.state for r in journal.rows()}
    assert states == {"t00": "done", "t01": "done", "t02": "interrupted", "t03": "interrupted"}
    assert script.running == 0 and trio.current_time() == pytest.approx(60)


async def test_every_outcome_is_recorded_as_judged(tmp_path: Path, autojump_clock: object) -> None:
    outcomes = {"t00": "completed", "t01": "rejected", "t02": "failed", "t03": "refused"}
    script = Script({t: 1 for t in outcomes}, outcomes)
    journal = await _run(tmp_path, script, 4, jobs=2, rehearsal=tmp_path)
    got = {r.id: (r.state, r.outcome) for r in journal.rows()}
    assert got == {
        "t00": ("done", "completed"),
        "t01": ("done", "rejected"),
        "t02": ("done", "failed"),
        "t03": ("refused", "refused"),
    }


async def test_under_the_disk_floor_no_task_starts(tmp_path: Path, autojump_clock: object) -> None:
    script = Script({"t00": 1})
    journal = await _run(tmp_path, script, 2, min_free_bytes=1 << 62)
    assert script.most == 0 and {r.state for r in journal.rows()} == {"pending"}
