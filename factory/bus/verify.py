"""Read-only verification of an event log, with an evidence gate (SPEC B-4, B-5).

One streaming pass over ``D/events.jsonl`` (memory grows with actors and open messages, not
with bytes). Every line goes through the strict path first: schema, canonical form, and two
reducers folding it in lockstep — that decides ``log-replays`` and
``replay-deterministic``. A line the strict path accepts satisfies the shape checks by
construction (its schema pins ``trust`` to ``untrusted-text``, ``granted`` to grantable
words, ``authorityTransferred`` to ``[]``, ``busAuthority`` to the frozen tuple, ids to
their grammar; the reducer pins addresses to registered refs). The line that breaks the
strict path, and every line after it, is read leniently as plain JSON and examined by the
shape checks, so the report names *which* rule a bad log broke, not just that it broke.

Gating is by exclusion: every check gates except the five richness checks in
:data:`RICHNESS`, which gate only when the log is claimed as evidence. A check added later
therefore gates by default. The fixed point is measured before and after; verification
never writes, and ``fixed-point-stable`` proves it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from factory.bus.logfile import LOG_NAME, fixed_point, iter_lines, open_log, parse_line, read_lines
from factory.bus.model import (
    ACTOR_PREFIX,
    BUS_AUTHORITY,
    CORRELATION_PREFIX,
    GRANTABLE,
    HEADROOM_MIN,
    MAX_ORDINAL,
    MESSAGE_PREFIX,
    UNTRUSTED,
    ActorRegistered,
    parse_ref,
)
from factory.bus.reducer import ReplayError, State, apply, state_digest
from factory.errors import CorruptLog

VERIFICATION_FORMAT: Final = "factory.bus-verification/1"
PROVES: Final = (
    "consistency and shape of this log's bytes only; not who wrote them, "
    "and not that any work was correct"
)
RICHNESS: Final = frozenset(
    {
        "actors-at-least-3",
        "actor-kinds-at-least-2",
        "correlation-thread-at-least-3",
        "acknowledged-at-least-1",
        "handoff-at-least-1",
    }
)


@dataclass(slots=True)
class Scan:
    """Facts gathered by the single pass; checks read these."""

    lines: int = 0
    replay_error: str | None = None
    deterministic: bool = True
    state: State = field(default_factory=lambda: State(keep_bodies=False))
    twin: State = field(default_factory=lambda: State(keep_bodies=False))
    handoff_authority: list[int] = field(default_factory=list)
    never_grantable: list[int] = field(default_factory=list)
    unlabelled: list[int] = field(default_factory=list)
    unminted: list[int] = field(default_factory=list)
    out_of_range: list[int] = field(default_factory=list)
    widened: list[int] = field(default_factory=list)
    registered: set[str] = field(default_factory=set)
    high_water: dict[str, int] = field(default_factory=dict)


def _note_id(scan: Scan, lineno: int, value: Any, prefix: str) -> None:
    ordinal = parse_ref(value, prefix) if isinstance(value, str) else None
    if ordinal is None:
        scan.out_of_range.append(lineno)
        return
    scan.high_water[prefix] = max(scan.high_water.get(prefix, 0), ordinal)


def _note_address(scan: Scan, lineno: int, value: Any, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or value not in scan.registered:
        scan.unminted.append(lineno)


def _observe_message(scan: Scan, lineno: int, msg: Any, handoff: bool) -> None:
    if not isinstance(msg, dict):
        scan.unlabelled.append(lineno)
        return
    if msg.get("trust") != UNTRUSTED:
        scan.unlabelled.append(lineno)
    authority = msg.get("authority")
    granted = authority.get("granted") if isinstance(authority, dict) else None
    if not isinstance(granted, list) or any(g not in GRANTABLE for g in granted):
        scan.never_grantable.append(lineno)
    if handoff and granted:
        scan.handoff_authority.append(lineno)
    for key in ("from", "to"):
        _note_address(scan, lineno, msg.get(key))
    _note_address(scan, lineno, msg.get("replyTo"), optional=True)
    _note_id(scan, lineno, msg.get("messageId"), MESSAGE_PREFIX)
    _note_id(scan, lineno, msg.get("correlationId"), CORRELATION_PREFIX)


def _observe_raw(scan: Scan, lineno: int, raw: dict[str, Any]) -> None:
    kind = raw.get("type")
    if kind == "actor.registered":
        _note_id(scan, lineno, raw.get("ref"), ACTOR_PREFIX)
        if isinstance(raw.get("ref"), str):
            scan.registered.add(raw["ref"])
        if raw.get("busAuthority") != list(BUS_AUTHORITY):
            scan.widened.append(lineno)
    elif kind in ("message.sent", "work.handed-off"):
        _observe_message(scan, lineno, raw.get("message"), kind == "work.handed-off")
        if kind == "work.handed-off" and raw.get("authorityTransferred") != []:
            scan.handoff_authority.append(lineno)
    elif kind in ("inbox.polled", "message.acked", "actor.heartbeat", "authority.denied"):
        _note_address(scan, lineno, raw.get("actorId"))


def scan_log(lines: Iterable[bytes]) -> Scan:
    """Run the single pass over raw lines (with LF); never raises for bad content."""
    scan = Scan()
    try:
        for lineno, line in iter_lines(lines):
            scan.lines = lineno
            if scan.replay_error is None:
                try:
                    event = parse_line(line, lineno)
                    apply(scan.state, event)
                    apply(scan.twin, event)
                    if isinstance(event, ActorRegistered):
                        scan.registered.add(event.ref)
                    continue  # its schema makes every shape check hold (see module doc)
                except CorruptLog as exc:
                    scan.replay_error = f"{exc.code}: {exc.message}"
                except ReplayError as exc:
                    scan.replay_error = f"{exc.code.name}: line {lineno}: {exc.message}"
            try:
                raw = json.loads(line)
            except ValueError:
                raw = None
            if isinstance(raw, dict):
                _observe_raw(scan, lineno, raw)
    except CorruptLog as exc:
        scan.replay_error = scan.replay_error or f"{exc.code}: {exc.message}"
    if scan.replay_error is None:
        scan.deterministic = state_digest(scan.state) == state_digest(scan.twin)
    for prefix, mark in (
        (ACTOR_PREFIX, scan.state.actor_hwm),
        (MESSAGE_PREFIX, scan.state.message_hwm),
        (CORRELATION_PREFIX, scan.state.correlation_hwm),
    ):
        scan.high_water[prefix] = max(scan.high_water.get(prefix, 0), mark)
    return scan


@dataclass(frozen=True, slots=True)
class Check:
    """A named predicate over the scan: returns ``(ok, detail)``."""

    id: str
    run: Callable[[Scan], tuple[bool, str]]


def _lines(bad: list[int], what: str) -> tuple[bool, str]:
    if not bad:
        return True, f"no {what}"
    shown = ", ".join(str(n) for n in bad[:5])
    return False, f"{len(bad)} line(s) with {what} (first: {shown})"


def _replays(s: Scan) -> tuple[bool, str]:
    if s.replay_error is None:
        return True, f"{s.lines} events replayed"
    return False, s.replay_error


def _deterministic(s: Scan) -> tuple[bool, str]:
    if s.replay_error is not None:
        return False, "not evaluated: the log does not replay"
    return s.deterministic, "two independent replays agree" if s.deterministic else "replays differ"


def _headroom(s: Scan) -> tuple[bool, str]:
    ok, detail = _lines(s.out_of_range, "malformed or out-of-range ids")
    worst = max(s.high_water.values(), default=0)
    if MAX_ORDINAL - worst <= HEADROOM_MIN:
        return False, f"highest ordinal {worst} leaves no headroom of {HEADROOM_MIN}"
    return ok, detail


def _richness(
    need: int, what: str, measure: Callable[[State], int]
) -> Callable[[Scan], tuple[bool, str]]:
    def run(s: Scan) -> tuple[bool, str]:
        if s.replay_error is not None:
            return False, "not evaluated: the log does not replay"
        got = measure(s.state)
        return got >= need, f"{got} {what} (need >= {need})"

    return run


CHECKS: Final[tuple[Check, ...]] = (
    Check("log-replays", _replays),
    Check("replay-deterministic", _deterministic),
    Check(
        "handoffs-transfer-no-authority",
        lambda s: _lines(s.handoff_authority, "a handoff carrying authority"),
    ),
    Check(
        "no-never-grantable-authority",
        lambda s: _lines(s.never_grantable, "a non-grantable authority granted"),
    ),
    Check(
        "bodies-labelled-untrusted",
        lambda s: _lines(s.unlabelled, "a body not labelled untrusted-text"),
    ),
    Check(
        "addresses-are-minted-refs",
        lambda s: _lines(s.unminted, "an address that is not a registered minted ref"),
    ),
    Check("ids-in-range-with-headroom", _headroom),
    Check("bus-authority-frozen", lambda s: _lines(s.widened, "a widened or altered busAuthority")),
    Check("actors-at-least-3", _richness(3, "actors", lambda st: len(st.actors))),
    Check(
        "actor-kinds-at-least-2",
        _richness(2, "actor kinds", lambda st: len({a.kind for a in st.actors.values()})),
    ),
    Check(
        "correlation-thread-at-least-3",
        _richness(
            3, "messages in the longest thread", lambda st: max(st.correlations.values(), default=0)
        ),
    ),
    Check("acknowledged-at-least-1", _richness(1, "acknowledged messages", lambda st: st.acks)),
    Check("handoff-at-least-1", _richness(1, "handoffs", lambda st: st.handoffs)),
)


def gates(check_id: str, as_evidence: bool) -> bool:
    """Whether a check gates: always, unless it is a richness check and no evidence is claimed."""
    return as_evidence or check_id not in RICHNESS


def verify(
    data_dir: Path, *, as_evidence: bool = False, checks: Sequence[Check] = CHECKS
) -> dict[str, Any]:
    """Verify ``D/events.jsonl`` read-only; returns the ``factory.bus-verification/1`` object.

    ``ok`` is true when every check that gates (given ``as_evidence``) passed; ``evidenceOk``
    when every check passed with evidence claimed. A missing log is scanned as empty.

    Raises:
        CorruptLog: ``log-not-regular``: the log is a symlink, folder, FIFO, ... (never read).
    """
    before = fixed_point(data_dir)
    f = open_log(data_dir / LOG_NAME)
    if f is None:
        scan = scan_log(())
    else:
        with f:
            scan = scan_log(read_lines(f))
    after = fixed_point(data_dir)
    results = []
    for check in checks:
        ok, detail = check.run(scan)
        results.append(
            {"id": check.id, "gates": gates(check.id, as_evidence), "ok": ok, "detail": detail}
        )
    stable = before == after
    results.append(
        {
            "id": "fixed-point-stable",
            "gates": True,
            "ok": stable,
            "detail": "unchanged by verification"
            if stable
            else "the log changed during verification",
        }
    )
    evidence_gates = [{"id": r["id"], "ok": r["ok"]} for r in results if gates(str(r["id"]), True)]
    return {
        "format": VERIFICATION_FORMAT,
        "ok": all(r["ok"] for r in results if r["gates"]),
        "evidenceClaimed": as_evidence,
        "evidenceOk": all(r["ok"] for r in evidence_gates),
        "evidenceGatesResult": evidence_gates,
        "fixedPoint": before,
        "fixedPointAfter": after,
        "checks": results,
        "proves": PROVES,
    }
