"""What a person (or a program) sees while a batch runs, on stderr.

At a terminal: a live table (rich), one row per task — phase, elapsed, the provider-time
bound labelled ``(not an ETA)``, verdict, outcome. Otherwise one JSON line per event
(``factory.batch-progress/1``). Task ids are checked names; nothing of a task's text, a
path or provider output is shown.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

PROGRESS_SCHEMA = "factory.batch-progress/1"
#: The live table's columns: at 80 columns nothing is cut (long cells fold, never "…").
COLUMNS = (
    ("task", "left"),
    ("try", "right"),
    ("phase", "left"),
    ("time", "right"),
    ("provider time left (not an ETA)", "right"),
    ("verdict / outcome", "left"),
)


class Screen(Protocol):
    def started(self, task_id: str, attempt: int) -> None: ...
    def progress(self, task_id: str, event: dict[str, Any]) -> None: ...
    def ended(self, task_id: str, outcome: str) -> None: ...
    def note(self, text: str) -> None: ...
    def earlier(self, task_id: str, outcome: str) -> None: ...


def _write(line: str) -> None:
    if sys.stderr is not None:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except OSError:
            pass


class JsonlScreen:
    """One ``factory.batch-progress/1`` line per event."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.t0 = clock()

    def _emit(self, **fields: Any) -> None:
        elapsed = int((self.clock() - self.t0) * 1000)
        _write(json.dumps({"schema": PROGRESS_SCHEMA, "elapsed_ms": elapsed, **fields}))

    def started(self, task_id: str, attempt: int) -> None:
        self._emit(event="started", task=task_id, attempt=attempt)

    def progress(self, task_id: str, event: dict[str, Any]) -> None:
        self._emit(
            event="stage",
            task=task_id,
            stage=event.get("stage"),
            verdict=event.get("verdict"),
            remaining_provider_time_upper_bound_ms=event.get(
                "remaining_provider_time_upper_bound_ms"
            ),
            bound_label="(not an ETA)",
        )

    def ended(self, task_id: str, outcome: str) -> None:
        self._emit(event="ended", task=task_id, outcome=outcome)

    def note(self, text: str) -> None:
        from factory.display import inert

        self._emit(event="note", text=inert(text, limit=300))

    def earlier(self, task_id: str, outcome: str) -> None:
        """A task a resumed batch does not run again: it ended in an earlier run."""
        self._emit(event="done-earlier", task=task_id, outcome=outcome)


@dataclass
class Row:
    phase: str = "waiting"
    attempt: int = 0
    started: float | None = None
    ended: float | None = None
    bound_ms: int | None = None
    verdict: str = ""
    outcome: str = ""


@dataclass
class HumanScreen:
    """A live table at a terminal (call :meth:`stop` at the end for the last frame)."""

    ids: list[str]
    rows: dict[str, Row] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    live: Any = None

    def __post_init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.rows = {i: Row() for i in self.ids}
        console = Console(file=sys.stderr)
        self.live = Live(self._table(), console=console, refresh_per_second=4, transient=False)
        self.live.start()

    def _table(self) -> Any:
        from rich import box
        from rich.table import Table

        now = time.monotonic()
        caption = "; ".join(self.notes[-3:]) or None
        table = Table(title="factory batch", caption=caption, box=box.SIMPLE_HEAD)
        for name, justify in COLUMNS:
            table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for task_id, r in self.rows.items():
            elapsed = "" if r.started is None else f"{(r.ended or now) - r.started:.0f}s"
            bound = "" if r.bound_ms is None else f"≤ {r.bound_ms // 1000}s"
            result = ", ".join(x for x in (r.verdict, r.outcome) if x)
            phase = r.phase.replace("_", " ")
            table.add_row(task_id, str(r.attempt or ""), phase, elapsed, bound, result)
        return table

    def _refresh(self) -> None:
        self.live.update(self._table())

    def started(self, task_id: str, attempt: int) -> None:
        self.rows[task_id] = Row(phase="starting", attempt=attempt, started=time.monotonic())
        self._refresh()

    def progress(self, task_id: str, event: dict[str, Any]) -> None:
        row = self.rows[task_id]
        row.phase = str(event.get("stage") or row.phase)
        bound = event.get("remaining_provider_time_upper_bound_ms")
        row.bound_ms = bound if isinstance(bound, int) else row.bound_ms
        row.verdict = str(event.get("verdict") or row.verdict)
        self._refresh()

    def ended(self, task_id: str, outcome: str) -> None:
        row = self.rows[task_id]
        row.phase, row.outcome, row.ended, row.bound_ms = "ended", outcome, time.monotonic(), None
        self._refresh()

    def note(self, text: str) -> None:
        from factory.display import inert

        self.notes.append(inert(text, limit=200))
        self._refresh()

    def earlier(self, task_id: str, outcome: str) -> None:
        self.rows[task_id] = Row(phase="ended earlier", outcome=outcome)
        self._refresh()

    def stop(self) -> None:
        self.live.stop()
