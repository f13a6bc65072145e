"""Agent-run progress on stderr: stage lines, heartbeats, a bound that is no ETA (SPEC A-9).

:class:`ProgressObserver` implements :class:`~factory.agent.observer.RunObserver`. For every
stage change, and every heartbeat (default 10 s, driven by :meth:`ProgressObserver.heartbeat`,
a trio task the run starts in its nursery), it writes one record carrying:

* ``elapsed_ms`` since the observer was created;
* the stage (a closed vocabulary; anything else becomes ``unknown``);
* ``remaining_invocations`` (0-4) and ``remaining_provider_time_upper_bound_ms`` =
  per-invocation timeout (ms) x invocations still reachable, labelled ``(not an ETA)``.
  The observer clamps the count to the smallest value seen so far and to 0 at
  ``terminal_outcome``, so the bound sequence never increases and ends at 0 whatever the
  caller passes;
* on verdict stages the verdict (``APPROVE`` / ``REQUEST_CHANGES``, anything else
  ``INVALID``); on the terminal stage the outcome (closed vocabulary).

Local git work, evidence storage and receipt I/O get no invented deadline: only provider
time is bounded. Modes:

* ``jsonl``: one JSON object per line, schema ``factory.agent-progress/1``;
* ``human``: plain lines; on a terminal, a rich live status line refreshed every second,
  with stage changes printed above it.

Task text, paths, secrets and provider output never appear: the observer API does not
receive them, and every value written comes from a closed vocabulary or is an integer.
A writer that raises, or a timer that fails, is swallowed: progress never changes an
outcome. After :meth:`ProgressObserver.close` nothing more is written (stale heartbeats
stay silent).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, Literal, TextIO, get_args

import trio
from pydantic import Field

from factory.agent.observer import Outcome, Phase, Stage
from factory.models import StrictModel

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

PROGRESS_SCHEMA: Final = "factory.agent-progress/1"
BOUND_LABEL: Final = "(not an ETA)"
MAX_INVOCATIONS = 4
DEFAULT_HEARTBEAT_S = 10.0
LIVE_REFRESH_S = 1.0

ProgressMode = Literal["human", "jsonl"]
ProgressVerdict = Literal["APPROVE", "REQUEST_CHANGES", "INVALID"]
ProgressStage = Stage | Literal["unknown"]
ProgressOutcome = Outcome | Literal["unknown"]

_STAGES: frozenset[str] = frozenset(get_args(Stage))
_OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))
_VERDICTS: frozenset[str] = frozenset({"APPROVE", "REQUEST_CHANGES"})


class ProgressRecord(StrictModel):
    """One progress record: a line of ``--progress jsonl`` (``factory.agent-progress/1``)."""

    schema_id: Literal["factory.agent-progress/1"] = Field(default=PROGRESS_SCHEMA, alias="schema")
    event: Literal["stage", "heartbeat"]
    stage: ProgressStage
    elapsed_ms: int = Field(ge=0)
    remaining_invocations: int = Field(ge=0, le=MAX_INVOCATIONS)
    remaining_provider_time_upper_bound_ms: int = Field(ge=0)
    bound_label: Literal["(not an ETA)"] = BOUND_LABEL
    verdict: ProgressVerdict | None = None
    outcome: ProgressOutcome | None = None


# ---- pure decisions -----------------------------------------------------------------------


def clamp_stage(stage: object) -> ProgressStage:
    """``stage`` if it is one of the A-9 stages, else ``"unknown"``."""
    return stage if isinstance(stage, str) and stage in _STAGES else "unknown"  # type: ignore[return-value]


def clamp_verdict(verdict: object) -> ProgressVerdict | None:
    """``None`` stays ``None``; a known verdict stays; anything else is ``"INVALID"``."""
    if verdict is None:
        return None
    return verdict if isinstance(verdict, str) and verdict in _VERDICTS else "INVALID"  # type: ignore[return-value]


def clamp_outcome(outcome: object) -> ProgressOutcome | None:
    """``None`` stays ``None``; a known outcome stays; anything else is ``"unknown"``."""
    if outcome is None:
        return None
    return outcome if isinstance(outcome, str) and outcome in _OUTCOMES else "unknown"  # type: ignore[return-value]


def next_remaining(previous: int, given: object, stage: ProgressStage) -> int:
    """The invocation count to report: never above ``previous``, 0 at the terminal stage.

    A non-integer or out-of-range ``given`` cannot raise the count: it is clamped to
    ``[0, previous]``.
    """
    if stage == "terminal_outcome":
        return 0
    if isinstance(given, bool) or not isinstance(given, int):
        return previous
    return max(0, min(previous, given))


def format_duration_ms(ms: int) -> str:
    """``950`` → ``"0s"``, ``64000`` → ``"1m 04s"``, ``3723000`` → ``"1h 02m 03s"`` (floor)."""
    total = max(0, ms) // 1000
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {seconds:02d}s"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def render_human(record: ProgressRecord) -> str:
    """The one-line human rendering of a record (ASCII only, so any stderr encoding works)."""
    if record.stage == "terminal_outcome":
        what = f"finished: {record.outcome or 'unknown'}"
    else:
        what = record.stage.replace("_", " ")
        if record.verdict is not None:
            what = f"{what}: {record.verdict}"
    if record.event == "heartbeat":
        what = f"{what} (still running)"
    bound = format_duration_ms(record.remaining_provider_time_upper_bound_ms)
    return (
        f"factory agent | {what} | elapsed {format_duration_ms(record.elapsed_ms)} | "
        f"provider time upper bound {bound} {BOUND_LABEL}"
    )


def render_status(record: ProgressRecord) -> str:
    """The short live-line text: current stage, elapsed time and the labelled bound."""
    bound = format_duration_ms(record.remaining_provider_time_upper_bound_ms)
    return (
        f"{record.stage.replace('_', ' ')} | {format_duration_ms(record.elapsed_ms)} | "
        f"upper bound {bound} {BOUND_LABEL}"
    )


def render_jsonl(record: ProgressRecord) -> str:
    """The JSON line of a record (keys in declaration order, ASCII-escaped)."""
    return json.dumps(record.to_json_value(), separators=(",", ":"), ensure_ascii=True)


# ---- the observer -------------------------------------------------------------------------


class _Clock:
    """Seconds from one source, pinned at creation (trio's clock inside a run, else monotonic).

    trio's clock has a random offset, so readings from two sources must never be mixed; if
    the pinned trio source becomes unavailable (outside the run), the last reading is kept.
    """

    def __init__(self, clock: Callable[[], float] | None) -> None:
        if clock is None:
            try:
                trio.current_time()
                clock = trio.current_time
            except RuntimeError:
                clock = time.monotonic
        try:
            start = clock()
        except Exception:  # a clock that fails from the start: fall back, never raise
            clock = time.monotonic
            start = clock()
        self._read = clock
        self._start = start
        self._last = start

    def elapsed_ms(self) -> int:
        with contextlib.suppress(Exception):  # a failing timer keeps the last reading
            self._last = max(self._last, self._read())
        return int((self._last - self._start) * 1000)


class ProgressObserver:
    """Progress on ``stream`` (normally ``sys.stderr``) for one agent run (SPEC A-9).

    Args:
        mode: ``"human"`` or ``"jsonl"``.
        stream: a text stream; its failures are swallowed.
        timeout_ms: the per-provider-invocation timeout (ms); the bound is this x the
            invocations still reachable.
        clock: seconds (float); default trio's clock inside a trio run, else monotonic.
        sleep: the heartbeat timer; default :func:`trio.sleep`.
        live: a rich live status line instead of plain lines; default: human mode on a
            terminal that is not dumb.
    """

    def __init__(
        self,
        mode: ProgressMode,
        stream: TextIO,
        timeout_ms: int,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
        live: bool | None = None,
    ) -> None:
        self._mode: ProgressMode = mode
        self._stream = stream
        self._timeout_ms = max(0, int(timeout_ms))
        self._clock = _Clock(clock)
        self._sleep = sleep or trio.sleep
        self._remaining = MAX_INVOCATIONS
        self._stage: ProgressStage = "validating"
        self._closed = False
        self._terminal_written = False
        self._live: Live | None = None
        self._console: Console | None = None
        if mode == "human":
            self._setup_live(live)

    # -- RunObserver ---------------------------------------------------------------------

    def stage(
        self,
        stage: Stage,
        *,
        remaining_invocations: int,
        verdict: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        if self._closed or self._terminal_written:
            return
        try:
            clamped = clamp_stage(stage)
            self._stage = clamped
            self._remaining = next_remaining(self._remaining, remaining_invocations, clamped)
            if clamped == "terminal_outcome":
                self._terminal_written = True
            record = self._record(
                "stage",
                verdict=clamp_verdict(verdict),
                outcome=clamp_outcome(outcome) if clamped == "terminal_outcome" else None,
            )
            self._emit(record)
        except Exception:  # observation never changes an outcome
            return

    def phase_started(self, phase: Phase) -> None:
        return None  # stages already cover phases for progress; spans are telemetry's job

    def phase_ended(self, phase: Phase, *, outcome: str, duration_ms: int) -> None:
        return None

    def close(self, *, outcome: Outcome, exit_code: int, error_code: str | None = None) -> None:
        """Write the terminal line if the run did not, stop the live line, go silent."""
        if self._closed:
            return
        if not self._terminal_written:
            self.stage("terminal_outcome", remaining_invocations=0, outcome=outcome)
        self._closed = True
        if self._live is not None:
            with contextlib.suppress(Exception):
                self._live.stop()

    # -- heartbeat -----------------------------------------------------------------------

    async def heartbeat(self, interval_s: float = DEFAULT_HEARTBEAT_S) -> None:
        """Run until cancelled or closed: a heartbeat record every ``interval_s`` seconds.

        On a live terminal line the line is refreshed every second instead. A failing
        timer or writer ends the heartbeat quietly; cancellation propagates.
        """
        try:
            if not interval_s > 0:
                return
            tick = min(interval_s, LIVE_REFRESH_S) if self._live is not None else interval_s
            while not self._closed:
                await self._sleep(tick)
                if self._closed or self._terminal_written:
                    return
                self._emit(self._record("heartbeat"))
        except Exception:  # a broken timer must not reach the run's nursery
            return

    # -- internals -----------------------------------------------------------------------

    def _record(
        self,
        event: Literal["stage", "heartbeat"],
        *,
        verdict: ProgressVerdict | None = None,
        outcome: ProgressOutcome | None = None,
    ) -> ProgressRecord:
        return ProgressRecord(
            event=event,
            stage=self._stage,
            elapsed_ms=self._clock.elapsed_ms(),
            remaining_invocations=self._remaining,
            remaining_provider_time_upper_bound_ms=self._remaining * self._timeout_ms,
            verdict=verdict,
            outcome=outcome,
        )

    def _emit(self, record: ProgressRecord) -> None:
        try:
            if self._mode == "jsonl":
                self._write(render_jsonl(record))
            elif self._live is not None:
                self._emit_live(self._live, record)
            else:
                self._write(render_human(record))
        except Exception:
            return

    def _write(self, line: str) -> None:
        self._stream.write(line + "\n")
        self._stream.flush()

    def _setup_live(self, live: bool | None) -> None:
        try:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self._stream, highlight=False, markup=False, emoji=False)
            if live is None:
                live = console.is_terminal and not console.is_dumb_terminal
            if not live:
                return
            self._console = console
            self._live = Live(
                console=console,
                auto_refresh=False,  # no refresh thread: the heartbeat task drives it
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
        except Exception:
            self._live = None

    def _emit_live(self, live: Live, record: ProgressRecord) -> None:
        from rich.text import Text

        line = render_human(record)
        if not live.is_started:
            live.start()
        if record.event == "stage":
            live.console.print(Text(line), soft_wrap=True)
        if record.stage == "terminal_outcome":
            live.stop()
            return
        status = Text(
            f"  ... {render_status(record)}", style="dim", no_wrap=True, overflow="ellipsis"
        )
        live.update(status, refresh=True)
