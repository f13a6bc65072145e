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
field gets its own section function there. The candidate sections (identities, changed
files, mutations, patches) and the shared rich helpers are in
:mod:`factory.agent.receipt_show_candidates`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from factory.agent.receipt import AgentReceipt
from factory.agent.receipt_facts import MODEL_OUTPUT_LABEL, ReceiptFacts, gather
from factory.agent.receipt_show_candidates import (
    candidates_section,
    capped,
    diff_section,
    mutations_section,
    ok_style,
    plain,
)
from factory.agent.receipt_text import (
    MAX_TASK_CHARS,
    clean,
    evidence_file,
    evidence_place,
    evidence_rows,
    format_bytes,
    format_ms,
    headline,
    liveness_note,
    short_digest,
    sweep_note,
    truncation_note,
)
from factory.agent.verify import RECEIPT_INVALID
from factory.display import inert_lines
from factory.models import parse_model
from factory.whole_line import Whole, labelled, show

_STATUS_STYLE: Final = {
    "completed": "bold green",
    "rejected": "bold yellow",
    "failed": "bold red",
    "interrupted": "bold magenta",
    "running": "bold cyan",
}
_VERDICT_STYLE: Final = {"APPROVE": "green", "REQUEST_CHANGES": "yellow"}


# ---- rich helpers ---------------------------------------------------------------------------


# ---- sections -------------------------------------------------------------------------------

Section = Callable[[ReceiptFacts, bool], list[RenderableType]]


def _verification(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    words, style = headline(f)
    lines: list[RenderableType] = [Text(words, style=style)]
    when = f" (checked {f.checked_at})" if f.checked_at else ""
    if f.verified:
        lines.append(
            Text.assemble(
                ("integrity: ", "bold"),
                ("VERIFIED ", "bold green"),
                plain(
                    f"revision, canonical bytes and {f.evidence_checked} evidence file(s) "
                    f"re-checked; {f.candidate_note()} (consistency, not authorship){when}"
                ),
            )
        )
        return lines
    lines.append(
        Text.assemble(
            ("integrity: ", "bold"),
            (
                "VERIFICATION FAILED: do not trust this receipt; what follows is what it claims",
                "bold red",
            ),
            plain(when),
        )
    )
    lines.extend(plain(f"  - {item}", "bold red") for item in f.failed)
    return lines


def _representation(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    """Where the judged candidate is now (issue 22): one line, and the paths that changed
    since its commit or that differ from it."""
    note = f.representation
    if note is None:
        return []
    style = "bold red" if note.bad else ("green" if trusted else "")
    lines: list[RenderableType] = [
        Text.assemble(("where the change is  ", "bold"), plain(note.sentence, style))
    ]
    if note.paths_label is not None:
        shown, left_out = capped(list(note.paths))
        left_out += note.left_out
        lines.append(plain(f"  {note.paths_label}:", "bold red" if note.bad else "yellow"))
        lines.extend(plain(f"    {p}") for p in shown)
        if left_out:
            lines.append(plain(f"    ... and {left_out} more path(s)", "dim"))
    return lines


def _summary(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("status", plain(r.status, ok_style(_STATUS_STYLE.get(r.status, "bold"), trusted)))
    if r.status == "running":
        grid.add_row("liveness", _liveness(f))
    grid.add_row("exit code", plain("-" if r.exit_code is None else r.exit_code))
    verdict_style = ok_style(_VERDICT_STYLE.get(r.verdict or "", ""), trusted)
    grid.add_row("verdict", plain(r.verdict or "-", verdict_style))
    if r.error is not None:
        grid.add_row("error", plain(f"{r.error.code}: {r.error.message}", "red"))
    grid.add_row("route", plain(r.route))
    grid.add_row("execution", plain(r.execution))
    task = r.task if len(r.task) <= MAX_TASK_CHARS else r.task[:MAX_TASK_CHARS] + " [cut]"
    grid.add_row("task", plain(task))
    grid.add_row("worktree", plain(r.worktree))
    if r.worktree_creation is not None:
        made = r.worktree_creation
        branch = f"branch {made.branch}" if made.branch is not None else "detached HEAD"
        grid.add_row("created", plain(f"by factory at {short_digest(made.base_commit)}, {branch}"))
    if r.base is not None:
        grid.add_row(
            "base",
            plain(f"commit {short_digest(r.base.commit)}  tree {short_digest(r.base.tree)}"),
        )
        grid.add_row("boundary", plain(f"{r.base.isolation}; {r.base.execution_boundary}"))
        grid.add_row("branch", plain(r.base.branch or "(detached HEAD)"))
    t = r.timings
    grid.add_row("started", plain(t.started_at))
    grid.add_row("ended", plain(t.ended_at or "-"))
    grid.add_row("duration", plain(format_ms(t.duration_ms)))
    grid.add_row("timeout", plain(f"{format_ms(r.timeout_ms)} per provider invocation"))
    grid.add_row("factory", plain(r.factory_version))
    if r.trace_id is not None:
        grid.add_row("trace id", plain(f"{r.trace_id} (OpenTelemetry)"))
    status = Text(r.status.upper(), style=ok_style(_STATUS_STYLE.get(r.status, "bold"), trusted))
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
    return plain(words, _LIVENESS_STYLE[state])


def _phases(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for p in f.receipt.phases:
        profile = p.profile if p.cli_version is None else f"{p.profile} {p.cli_version}"
        code = "-" if p.process_exit_code is None else str(p.process_exit_code)
        line = Text.assemble(
            plain(p.outcome, ok_style(_VERDICT_STYLE.get(p.verdict or "", ""), trusted)),
            f"  {format_ms(p.duration_ms)}  exit {code}  ",
            plain(profile),
            "\n",
            plain(f"observed: {p.observed_postcondition}", "dim"),
        )
        swept = sweep_note(p)
        if swept is not None:
            line.append("\n")  # a real line break; plain() would show it as \x0a
            line.append_text(plain(swept, "yellow"))
        grid.add_row(plain(p.phase), line)
    if not f.receipt.phases:
        grid.add_row(plain("-"), plain("no phase ran"))
    return [Group(Text("phases", style="bold"), grid)]


def _reviews(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    if not f.reviews:
        return []
    out: list[RenderableType] = [
        Text.assemble(("what the reviewers said", "bold"), (f"  ({MODEL_OUTPUT_LABEL})", "dim"))
    ]
    for note in f.reviews:
        out.append(Text.assemble("  ", plain(note.phase, "bold"), " ", plain(note.verdict or "-")))
        if note.summary is None:
            out.append(plain(f"    {note.withheld}", "dim"))
            if note.wrote is not None:
                out.append(
                    plain(f"    what the reviewer wrote instead ({MODEL_OUTPUT_LABEL}):", "dim")
                )
                out.extend(Text("      " + ln) for ln in inert_lines(note.wrote, max_lines=40))
            continue
        out.extend(Text("    " + line) for line in inert_lines(note.summary, max_lines=40))
    return out


def _evidence(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    failed = {e["path"] for e in f.report.get("evidence", []) if not e.get("ok")}
    table = Table(title="evidence", title_justify="left", expand=False)
    everything = evidence_rows(r)
    rows, left_out = capped(everything)
    # A name keeps its width (cut into "." rows it could not be read or copied); the size
    # may wrap instead, before its "(9.1 KiB)".
    widest = max((len(evidence_file(e)) for _, e in rows), default=4)
    table.add_column("file", overflow="fold", min_width=min(widest, 44))
    noted = any(truncation_note(e) is not None for _, e in rows)  # a note needs the room
    table.add_column("size", max_width=None if noted else 10)
    table.add_column("sha256", no_wrap=True)
    for _, e in rows:
        name = plain(evidence_file(e), "bold red" if e.path in failed else "")
        if e.path in failed:
            name.append(" FAILED", style="bold red")
        size = plain(format_bytes(e.bytes))
        cut = truncation_note(e)
        if cut is not None:
            size.append_text(plain("\n" + cut, "yellow"))
        table.add_row(name, size, plain(short_digest(e.sha256)))
    if not rows:
        table.add_row(*(plain("-") for _ in range(3)))
    media = sorted({e.media_type for _, e in everything})
    policies = sorted({e.policy for _, e in everything})
    parts: list[RenderableType] = [table]
    if left_out:
        parts.append(plain(f"... and {left_out} more evidence file(s)", "dim"))
    parts.append(plain(evidence_place(f), "dim"))
    parts.append(
        plain("'...' stands for the rest of the SHA-256; full paths are in the receipt", "dim")
    )
    if everything:
        parts.append(
            plain(f"media types: {', '.join(media)}; policy: {', '.join(policies)}", "dim")
        )
    return parts


def _residuals(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    lines: list[RenderableType] = [Text("declared residuals", style="bold")]
    lines.extend(plain(f"- {item}") for item in r.residuals)
    if not r.residuals:
        lines.append(plain("- (none declared)", "red"))
    return lines


def _revision(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    if r.revision is None:
        return [labelled("revision", "none (a running reservation is not closed)", style="cyan")]
    # The whole digest on one line, never folded: it is what a person compares (issue 28).
    # One space after the label: "revision sha256:<64 hex>" is exactly 80 columns.
    line = Whole("revision ", style="bold")
    line.append(clean(r.revision))
    out: list[RenderableType] = [line]
    if r.compute_revision() != r.revision:
        out.append(
            labelled(
                "check   ", "body digest DOES NOT MATCH: the receipt was edited", style="bold red"
            )
        )
    return out


#: The sections in display order; ``--diff`` adds :func:`diff_section` after the candidates.
SECTIONS: Final[tuple[Section, ...]] = (
    _verification,
    _representation,
    _summary,
    _phases,
    _reviews,
    mutations_section,
    candidates_section,
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
        sections.insert(sections.index(candidates_section) + 1, diff_section)
    for n, section in enumerate(sections):
        parts = section(facts, trusted)
        if not parts:
            continue
        if n:
            console.print()
        for part in parts:
            show(console, part)
    if not trusted:
        console.print()
        for part in _verification(facts, trusted):
            show(console, part)


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
