"""What the sessions on a bus did, as a person reads it (``factory bus verify`` at a
terminal; issue 28): who registered, how many messages in how many threads, what was
acknowledged and handed off, what the bus refused — then the verification's verdict.

The counts come from replaying the log (the same reducer as the server, bodies not
kept); names are the senders' own words and are shown inert. The richness checks
(:data:`factory.bus.verify.RICHNESS`) matter only when the log is claimed as evidence:
without ``--as-evidence`` they are listed as "not claimed", never as failures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from factory.bus.logfile import LOG_NAME, fold, open_log
from factory.bus.reducer import State
from factory.bus.verify import RICHNESS, BusVerification
from factory.errors import FactoryError


@dataclass(frozen=True, slots=True)
class Activity:
    """Counts replayed from the log (``None`` fields: the log did not replay)."""

    events: int
    actors: tuple[tuple[str, str, str], ...]  # (ref, name, kind)
    messages: int
    threads: int
    acks: int
    handoffs: int
    rejections: int
    heartbeats: int


def activity(data_dir: Path) -> Activity | None:
    """The log's activity, or ``None`` when it does not replay (verify says why)."""
    state = State(keep_bodies=False)
    try:
        handle = open_log(data_dir / LOG_NAME)
        if handle is None:
            return None
        with handle:
            fold(state, handle)
    except FactoryError:
        return None
    actors = tuple((a.ref, a.name, a.kind) for a in state.actors.values())
    threads = {m.correlation_id for m in state.messages.values()}
    return Activity(
        events=state.events,
        actors=actors,
        messages=sum(not m.handoff for m in state.messages.values()),
        threads=len(threads),
        acks=state.acks,
        handoffs=state.handoffs,
        rejections=state.rejections,
        heartbeats=state.heartbeats,
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render(data_dir: Path, report: BusVerification, seen: Activity | None) -> list[str]:
    """The summary's lines (plain text; every untrusted word inert)."""
    from factory.display import inert, inert_join

    where = inert(str(data_dir / LOG_NAME))
    failed = report.failed_gates()
    head = "verifies" if not failed else "does NOT verify: " + ", ".join(failed)
    lines = [f"Bus log {where}: {head}"]
    if seen is None:
        lines.append("  the log does not replay, so nothing can be said of its sessions")
    else:
        names = [f"{name} ({kind}, {ref})" for ref, name, kind in seen.actors]
        lines.append(f"  {_plural(len(seen.actors), 'actor')}: " + (inert_join(names) or "none"))
        lines.append(
            f"  {_plural(seen.messages, 'message')} in {_plural(seen.threads, 'thread')};"
            f" {seen.acks} acknowledged; {_plural(seen.handoffs, 'handoff')};"
            f" {_plural(seen.rejections, 'refused command')};"
            f" {_plural(seen.heartbeats, 'heartbeat')}; {_plural(seen.events, 'event')} in all"
        )
    short = [c.id for c in report.checks if c.id in RICHNESS and not c.ok]
    if report.evidence_claimed:
        verdict = "holds" if report.evidence_ok else "does NOT hold"
        lines.append(f"  as evidence (--as-evidence): {verdict}")
    elif short:
        lines.append(
            "  not claimed as evidence; as evidence it would fall short of: " + ", ".join(short)
        )
    lines.append(f"  proves: {report.proves}")
    return lines
