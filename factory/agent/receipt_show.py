"""A readable rendering of an agent receipt for operators: ``factory receipt show R`` (SPEC A-8).

It verifies first. :func:`render_facts` takes a :class:`~factory.agent.receipt_facts.
ReceiptFacts` (the receipt, its ``factory receipt verify`` report and what may be quoted
from verified evidence) and prints, on a rich console:

* the verification result first. A receipt that failed verification gets a red
  **VERIFICATION FAILED** banner naming the failed checks, first and last, and everything
  in between is shown as unverified claims: no success colours, no reassuring line;
* the outcome (status, exit code, authoritative verdict, error), the route — a rehearsal
  receipt says in capitals that it is a rehearsal with a scripted model — and the base;
* the phases with durations and verdicts, then what the reviewers said (the verdict
  files' summaries, labelled as model output);
* the candidate identities and changed files (state, mode, size, short SHA-256), and with
  ``diff=True`` each candidate's bound patch;
* every evidence file (role, path, size, short SHA-256), the declared residuals and the
  revision.

Every string taken from the receipt or its evidence is printed as plain text through the
display sanitiser (:mod:`factory.display`): rich markup is not interpreted and control,
bidi and invisible characters are shown escaped, so a receipt cannot drive or mislead the
operator's terminal. Long lists are capped (:data:`MAX_ROWS` rows each, :data:`MAX_DIFF_LINES`
patch lines) with a count of what was left out.

Sections are functions of ``(facts, trusted)`` listed in :data:`SECTIONS`; a new receipt
field gets its own section function there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from factory.agent.receipt import AgentReceipt, CandidateRecord
from factory.agent.receipt_facts import MODEL_OUTPUT_LABEL, ReceiptFacts, gather
from factory.agent.receipt_text import (
    MAX_DIFF_LINES,
    MAX_ROWS,
    MAX_TASK_CHARS,
    clean,
    evidence_file,
    evidence_rows,
    format_bytes,
    format_ms,
    liveness_note,
    short_digest,
    sweep_note,
    truncation_note,
)
from factory.agent.verify import RECEIPT_INVALID
from factory.display import inert_lines
from factory.models import parse_model

_STATUS_STYLE: Final = {
    "completed": "bold green",
    "rejected": "bold yellow",
    "failed": "bold red",
    "interrupted": "bold magenta",
    "running": "bold cyan",
}
_VERDICT_STYLE: Final = {"APPROVE": "green", "REQUEST_CHANGES": "yellow"}


# ---- rich helpers ---------------------------------------------------------------------------


def _t(value: object, style: str = "") -> Text:
    return Text(clean(str(value)), style=style)


def _ok(style: str, trusted: bool) -> str:
    """A success colour only for a verified receipt: an unverified one looks plain."""
    return style if trusted else ""


def _capped(items: list[Any]) -> tuple[list[Any], int]:
    return items[:MAX_ROWS], max(0, len(items) - MAX_ROWS)


# ---- sections -------------------------------------------------------------------------------

Section = Callable[[ReceiptFacts, bool], list[RenderableType]]


def _verification(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    if f.verified:
        return [
            Text.assemble(
                ("VERIFIED ", "bold green"),
                _t(
                    f"revision, canonical bytes and {f.evidence_checked} evidence file(s) "
                    f"re-checked; {f.candidate_note()} (consistency, not authorship)"
                ),
            )
        ]
    lines: list[RenderableType] = [
        Text(
            "VERIFICATION FAILED: do not trust this receipt; what follows is what it claims",
            style="bold white on red",
        )
    ]
    lines.extend(_t(f"  - {item}", "bold red") for item in f.failed)
    return lines


def _summary(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("status", _t(r.status, _ok(_STATUS_STYLE.get(r.status, "bold"), trusted)))
    if r.status == "running":
        grid.add_row("liveness", _liveness(f))
    grid.add_row("exit code", _t("-" if r.exit_code is None else r.exit_code))
    verdict_style = _ok(_VERDICT_STYLE.get(r.verdict or "", ""), trusted)
    grid.add_row("verdict", _t(r.verdict or "-", verdict_style))
    if r.error is not None:
        grid.add_row("error", _t(f"{r.error.code}: {r.error.message}", "red"))
    grid.add_row("route", _t(r.route))
    grid.add_row("execution", _t(r.execution))
    task = r.task if len(r.task) <= MAX_TASK_CHARS else r.task[:MAX_TASK_CHARS] + " [cut]"
    grid.add_row("task", _t(task))
    grid.add_row("worktree", _t(r.worktree))
    if r.worktree_creation is not None:
        made = r.worktree_creation
        branch = f"branch {made.branch}" if made.branch is not None else "detached HEAD"
        grid.add_row("created", _t(f"by factory at {short_digest(made.base_commit)}, {branch}"))
    if r.base is not None:
        grid.add_row(
            "base",
            _t(f"commit {short_digest(r.base.commit)}  tree {short_digest(r.base.tree)}"),
        )
        grid.add_row("boundary", _t(f"{r.base.isolation}; {r.base.execution_boundary}"))
        grid.add_row("branch", _t(r.base.branch or "(detached HEAD)"))
    t = r.timings
    grid.add_row("started", _t(t.started_at))
    grid.add_row("ended", _t(t.ended_at or "-"))
    grid.add_row("duration", _t(format_ms(t.duration_ms)))
    grid.add_row("timeout", _t(f"{format_ms(r.timeout_ms)} per provider invocation"))
    grid.add_row("factory", _t(r.factory_version))
    if r.trace_id is not None:
        grid.add_row("trace id", _t(f"{r.trace_id} (OpenTelemetry)"))
    status = Text(r.status.upper(), style=_ok(_STATUS_STYLE.get(r.status, "bold"), trusted))
    label = "factory agent receipt  " if trusted else "UNVERIFIED agent receipt  "
    title = Text.assemble((label, "bold"), status)
    out: list[RenderableType] = [Panel(grid, title=title, title_align="left", expand=False)]
    if r.route == "rehearsal":
        out.append(
            Text(
                "REHEARSAL: this run used the scripted loopback model, not a real model. "
                "It proves the control path only, nothing about model judgement.",
                style="bold black on yellow",
            )
        )
    return out


_LIVENESS_STYLE: Final = {"abandoned": "bold red", "running": "cyan", "unknown": "dim"}


def _liveness(f: ReceiptFacts) -> Text:
    """Whether the factory process that wrote a ``running`` receipt is still there."""
    state, words = liveness_note(f) or ("unknown", "-")
    return _t(words, _LIVENESS_STYLE[state])


def _phases(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for p in f.receipt.phases:
        profile = p.profile if p.cli_version is None else f"{p.profile} {p.cli_version}"
        code = "-" if p.process_exit_code is None else str(p.process_exit_code)
        line = Text.assemble(
            _t(p.outcome, _ok(_VERDICT_STYLE.get(p.verdict or "", ""), trusted)),
            f"  {format_ms(p.duration_ms)}  exit {code}  ",
            _t(profile),
            "\n",
            _t(f"observed: {p.observed_postcondition}", "dim"),
        )
        swept = sweep_note(p)
        if swept is not None:
            line.append_text(_t("\n" + swept, "yellow"))
        grid.add_row(_t(p.phase), line)
    if not f.receipt.phases:
        grid.add_row(_t("-"), _t("no phase ran"))
    return [Group(Text("phases", style="bold"), grid)]


def _reviews(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    if not f.reviews:
        return []
    out: list[RenderableType] = [
        Text.assemble(("what the reviewers said", "bold"), (f"  ({MODEL_OUTPUT_LABEL})", "dim"))
    ]
    for note in f.reviews:
        out.append(Text.assemble("  ", _t(note.phase, "bold"), " ", _t(note.verdict or "-")))
        if note.summary is None:
            out.append(_t(f"    {note.withheld}", "dim"))
            continue
        out.extend(Text("    " + line) for line in inert_lines(note.summary, max_lines=40))
    return out


def _candidate(label: str, c: CandidateRecord, trusted: bool) -> Group:
    b = c.body
    head = Text.assemble(
        (f"{label} candidate ", "bold"),
        _t(short_digest(c.identity, 16)),
        "  tree ",
        _t(short_digest(b.candidate_tree)),
        f"\n  patch {format_bytes(b.patch_bytes)}  {len(b.files)} changed path(s)",
    )
    table = Table(expand=False, show_edge=False)
    for name in ("state", "path", "mode", "size", "sha256"):
        table.add_column(name, overflow="fold")
    rows, left_out = _capped(b.files)
    for file in rows:
        style = {"added": _ok("green", trusted), "deleted": "red"}.get(file.state, "")
        table.add_row(
            _t(file.state, style),
            _t(file.path),
            _t(file.mode),
            _t(format_bytes(file.bytes)),
            _t(short_digest(file.sha256)),
        )
    parts: list[Any] = [head, table]
    if left_out:
        parts.append(_t(f"... and {left_out} more changed path(s)", "dim"))
    if c.conversions_differ:
        parts.append(
            _t(
                "  WARNING: the repository's own conversions (end of line, ident, encoding, "
                "a clean filter) would store other bytes for a changed file: a plain git add "
                "would not commit what was reviewed",
                "bold yellow",
            )
        )
    for group in c.collisions[:MAX_ROWS]:
        names = " | ".join(group.paths)
        parts.append(_t(f"  WARNING: {group.kind} collision (one file on macOS/Windows): {names}"))
    return Group(*parts)


def _mutations(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    if not f.mutations:
        return []
    out: list[RenderableType] = [Text("paths changed where a phase must not change them", "bold")]
    for note in f.mutations:
        out.append(Text.assemble("  ", _t(note.phase, "bold"), " ", _t(note.outcome, "red")))
        if note.paths is None:
            out.append(_t(f"    {note.withheld}", "dim"))
            continue
        if not note.paths:
            out.append(_t("    no bound path changed; the candidate identity did", "dim"))
        rows, left_out = _capped(note.paths)
        out.extend(_t(f"    {path}") for path in rows)
        if left_out:
            out.append(_t(f"    ... and {left_out} more path(s)", "dim"))
    return out


def _candidates(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    out: list[RenderableType] = []
    for label, c in (("initial", r.candidate.initial), ("repaired", r.candidate.repaired)):
        if c is not None:
            if out:
                out.append(Text())
            out.append(_candidate(label, c, trusted))
    return out or [_t("candidate: none recorded", "dim")]


def diff_lines(text: str, *, trusted: bool = True, limit: int = MAX_DIFF_LINES) -> list[Text]:
    """A patch as inert, coloured lines (additions green, deletions red), capped; an
    unverified receipt's patch gets no green."""
    out = []
    for line in inert_lines(text.removesuffix("\n"), max_lines=limit):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = _ok("green", trusted)
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(Text(line, style=style))
    return out


def _diff(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    out: list[RenderableType] = []
    for patch in f.patches:
        out.append(Text(f"{patch.label} candidate patch (bound evidence)", style="bold"))
        if patch.text is None:
            out.append(_t(f"  {patch.withheld}", "dim"))
        else:
            out.extend(diff_lines(patch.text, trusted=trusted))
    return out


def _evidence(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    failed = {e["path"] for e in f.report.get("evidence", []) if not e.get("ok")}
    table = Table(title="evidence", title_justify="left", expand=False)
    table.add_column("file", overflow="fold")
    table.add_column("size", no_wrap=True)
    table.add_column("sha256", no_wrap=True)
    everything = evidence_rows(r)
    rows, left_out = _capped(everything)
    for _, e in rows:
        name = _t(evidence_file(e), "bold red" if e.path in failed else "")
        if e.path in failed:
            name.append(" FAILED", style="bold red")
        size = _t(format_bytes(e.bytes))
        cut = truncation_note(e)
        if cut is not None:
            size.append_text(_t("\n" + cut, "yellow"))
        table.add_row(name, size, _t(short_digest(e.sha256)))
    if not rows:
        table.add_row(*(_t("-") for _ in range(3)))
    media = sorted({e.media_type for _, e in everything})
    policies = sorted({e.policy for _, e in everything})
    parts: list[RenderableType] = [table]
    if left_out:
        parts.append(_t(f"... and {left_out} more evidence file(s)", "dim"))
    parts.append(_t(f"evidence folder: {r.evidence_dir}", "dim"))
    parts.append(
        _t("'...' stands for the rest of the SHA-256; full paths are in the receipt", "dim")
    )
    if everything:
        parts.append(_t(f"media types: {', '.join(media)}; policy: {', '.join(policies)}", "dim"))
    return parts


def _residuals(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    lines: list[RenderableType] = [Text("declared residuals", style="bold")]
    lines.extend(_t(f"- {item}") for item in r.residuals)
    if not r.residuals:
        lines.append(_t("- (none declared)", "red"))
    return lines


def _revision(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    if r.revision is None:
        grid.add_row("revision", _t("none (a running reservation is not closed)", "cyan"))
        return [grid]
    grid.add_row("revision", _t(r.revision))
    if r.compute_revision() != r.revision:
        grid.add_row("check", _t("body digest DOES NOT MATCH: the receipt was edited", "bold red"))
    return [grid]


#: The sections in display order; ``--diff`` adds :func:`_diff` after the candidates.
SECTIONS: Final[tuple[Section, ...]] = (
    _verification,
    _summary,
    _phases,
    _reviews,
    _mutations,
    _candidates,
    _evidence,
    _residuals,
    _revision,
)


# ---- entry points ---------------------------------------------------------------------------


def parse_receipt(receipt_json: Any) -> AgentReceipt:
    """Validate a decoded receipt JSON value.

    Raises:
        ReceiptInvalid: (``receipt-invalid``, exit 4) not a ``factory.agent-receipt/1``.
    """
    return parse_model(AgentReceipt, receipt_json, code=RECEIPT_INVALID, what="receipt")


def render_facts(facts: ReceiptFacts, console: Console, *, diff: bool = False) -> None:
    """Print the receipt view (see the module docstring); a failed verification is named
    first and again last, so it is the last thing on screen too."""
    trusted = facts.verified
    sections = list(SECTIONS)
    if diff:
        sections.insert(sections.index(_candidates) + 1, _diff)
    for n, section in enumerate(sections):
        parts = section(facts, trusted)
        if not parts:
            continue
        if n:
            console.print()
        for part in parts:
            console.print(part)
    if not trusted:
        console.print()
        for part in _verification(facts, trusted):
            console.print(part)


def render_verified(
    receipt: AgentReceipt,
    report: Mapping[str, Any],
    console: Console,
    *,
    receipt_path: Path,
    diff: bool = False,
) -> ReceiptFacts:
    """Gather the facts from a receipt and its ``verify`` report, and render them."""
    facts = gather(receipt, report, receipt_path)
    render_facts(facts, console, diff=diff)
    return facts
