"""``factory review show``: a readable rendering of one lineage (SPEC R).

Every string that came from a model, a file name or git is made inert by the one display
sanitiser and printed as :class:`rich.text.Text` (never as markup), so a hostile claim or
path cannot drive the terminal. Long lists are capped with a count of what was left out.
"""

from __future__ import annotations

from typing import Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from factory.display import inert
from factory.review.machine import next_commands
from factory.review.state import ReviewState
from factory.review.store import Corrupt, Loaded

MAX_ROWS: Final = 200
_STYLE: Final = {"approved": "bold green", "escalated": "bold yellow"}


def _t(value: object, style: str = "") -> Text:
    return Text(inert(str(value)), style=style)


def _outcomes(s: ReviewState) -> dict[str, str]:
    return {o.finding_id: o.outcome for o in s.review.outcomes} if s.review else {}


def _findings(s: ReviewState) -> Table:
    table = Table(title="findings", show_lines=False, expand=False)
    for col in ("id", "severity", "location", "evidence", "causality", "outcome", "claim"):
        table.add_column(col)
    outcomes = _outcomes(s)
    findings = s.findings()
    for f in findings[:MAX_ROWS]:
        table.add_row(
            _t(f.id),
            _t(f.severity),
            _t(f.location),
            _t(f.evidence_class or "-"),
            _t(f.causal_disposition or "-"),
            _t(outcomes.get(f.id, "pending")),
            _t(f.claim),
        )
    if len(findings) > MAX_ROWS:
        table.caption = f"{len(findings) - MAX_ROWS} more not shown"
    return table


def _attempts(s: ReviewState) -> Table:
    table = Table(title=f"correction (budget {s.correction_budget} lines)")
    for col in ("#", "forecast", "measured", "cumulative", "criteria", "regression", "outcome"):
        table.add_column(col)
    for a in s.correction.attempts:
        table.add_row(
            _t(a.number),
            _t(a.proposed_lines),
            _t(a.actual_lines),
            _t(a.cumulative_lines),
            _t(a.original_criteria.passed),
            _t(a.correction_regression.passed),
            _t(a.outcome),
        )
    if s.correction.forecast is not None:
        table.caption = f"forecast pending: {s.correction.forecast} lines"
    return table


def render(item: Loaded | Corrupt, console: Console, exits: tuple[str, ...] = ()) -> None:
    """Print ``item`` on ``console``; ``exits``: for an invalid record, the ceremonies that
    take it out of the store (printed as its next commands)."""
    if isinstance(item, Corrupt):
        console.print(_t(f"lineage {item.lineage_id}: INVALID RECORD", "bold red"))
        console.print(_t(item.error.message))
        console.print(_t("It grants nothing. Nothing was changed."))
        for cmd in (*exits, "factory review status"):
            console.print(_t(f"next: {cmd}"), soft_wrap=True)  # one line: runnable as printed
        return
    s = item.state
    console.print(_t(f"review lineage {s.lineage_id} (generation {s.generation})", "bold"))
    console.print(_t(f"state: {s.state}", _STYLE.get(s.state, "bold cyan")))
    if s.escalation is not None:
        console.print(_t(f"escalated: {s.escalation.reason} — {s.escalation.detail}", "yellow"))
    if s.invalidation is not None:
        console.print(_t(f"invalidated: {s.invalidation.reason}", "yellow"))
    if s.predecessor is not None:
        p = s.predecessor
        console.print(
            _t(f"recovered from {p.lineage_id} ({p.disposition}) by {p.actor}: {p.reason}")
        )
    snap = s.initial_snapshot
    console.print(_t(f"target: {snap.kind} {snap.base_tree[:12]} -> {snap.candidate_tree[:12]}"))
    if s.current_snapshot.candidate_tree != snap.candidate_tree:
        console.print(_t(f"corrected candidate: {s.current_snapshot.candidate_tree[:12]}"))
    console.print(_t(f"paths: {len(s.genesis_paths)}; authored lines: {s.changed_lines}"))
    reasons = ", ".join(r.code + (f" ({r.example})" if r.example else "") for r in s.risk.reasons)
    console.print(_t(f"risk: {s.risk.level} — {reasons}"))
    done = {r.lens for r in s.lens_results}
    lenses = ", ".join(f"{lens}{'' if lens in done else ' (pending)'}" for lens in s.lenses)
    console.print(_t(f"lenses: {lenses or 'none'}"))
    if s.findings():
        console.print(_findings(s))
    if s.review is not None:
        console.print(_t(f"to fix: {', '.join(s.review.fix_finding_ids) or 'nothing'}"))
        for fu in s.review.follow_ups[:MAX_ROWS]:
            console.print(_t(f"follow-up {fu.finding_id or ''}: {fu.observation}"))
    if s.correction.attempts or s.correction.forecast is not None:
        console.print(_attempts(s))
    fe = s.final_evidence
    if fe is not None:
        run = f", run exit {fe.run.exit_code}" if fe.run is not None else ""
        console.print(_t(f"final evidence: {fe.bytes} bytes, {fe.evidence_hash[:23]}{run}"))
    console.print(_t(f"store revision: {item.revision}"), soft_wrap=True)  # whole: copied
    console.print(_t(f"receipt: {item.receipt}"))
    for cmd in next_commands(s):
        console.print(_t(f"next: {cmd}"), soft_wrap=True)  # one line: runnable as printed
