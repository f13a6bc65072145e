"""A readable rendering of an agent receipt for operators: ``factory receipt show R`` (SPEC A-8).

:func:`render` parses a receipt's JSON value with the typed model
(:class:`~factory.agent.receipt.AgentReceipt`) and prints, on the given rich console:
the outcome (status, exit code, authoritative verdict, error), the execution route — a
rehearsal receipt says in capitals that it is a rehearsal with a scripted model — the
base, the phases with durations and verdicts, the candidate identities and changed files
(state, mode, size, short SHA-256), every evidence file (role, path, size, short SHA-256),
the declared residuals, and the revision with a self-consistency check (the body's digest
recomputed; this shows consistency, not authorship — ``factory receipt verify`` re-hashes
the evidence).

Every string taken from the receipt is printed as plain text: rich markup is not
interpreted and control characters (ESC, CR, …) are shown escaped, so a receipt cannot
drive the operator's terminal. Long lists are capped (:data:`MAX_ROWS` rows each) with a
count of what was left out.
"""

from __future__ import annotations

from typing import Any, Final

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from factory.agent.receipt import AgentReceipt, CandidateRecord, EvidenceRef, PhaseRecord
from factory.agent.verify import RECEIPT_INVALID
from factory.display import inert
from factory.models import parse_model

MAX_ROWS: Final = 200
MAX_TASK_CHARS: Final = 2000

_STATUS_STYLE: Final = {
    "completed": "bold green",
    "rejected": "bold yellow",
    "failed": "bold red",
    "interrupted": "bold magenta",
    "running": "bold cyan",
}
_VERDICT_STYLE: Final = {"APPROVE": "green", "REQUEST_CHANGES": "yellow"}


# ---- pure formatting ------------------------------------------------------------------------


def clean(text: str) -> str:
    """``text`` made inert by the one display sanitiser (:func:`factory.display.inert`).

    Newlines and tabs are escaped too, so each value stays on its cell's line.
    """
    return inert(text, limit=None)


def short_digest(value: str | None, keep: int = 12) -> str:
    """``sha256:abcdef…`` → ``sha256:abcdef012345``; a bare hex → its first ``keep``."""
    if not value:
        return "-"
    prefix, sep, rest = value.partition(":")
    if sep and prefix.isalnum():
        return f"{prefix}:{rest[:keep]}"
    return value[:keep]


def format_bytes(n: int | None) -> str:
    """``None`` → ``-``; ``1234`` → ``1,234 B``; ``5_000_000`` → ``5,000,000 B (4.8 MiB)``."""
    if n is None:
        return "-"
    exact = f"{n:,} B"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{exact} ({n / size:.1f} {unit})"
    return exact


def format_ms(ms: int | None) -> str:
    """``None`` → ``-``; ``850`` → ``850 ms``; ``61500`` → ``1m 01.5s``."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m {rest:04.1f}s"


def evidence_file(ref: EvidenceRef) -> str:
    """The evidence file name for display; the A-7 name ``<role>-<sha256>`` is shortened.

    ``.../worker-stdout-<64 hex>`` → ``worker-stdout-0123456789ab...``; any other path is
    returned whole.
    """
    name = ref.path.replace("\\", "/").rsplit("/", 1)[-1]
    if ref.sha256 and ref.sha256 in name and len(ref.sha256) > 12:
        return name.replace(ref.sha256, ref.sha256[:12] + "...")
    return ref.path


def _t(value: object, style: str = "") -> Text:
    return Text(clean(str(value)), style=style)


def _capped(items: list[Any]) -> tuple[list[Any], int]:
    return items[:MAX_ROWS], max(0, len(items) - MAX_ROWS)


# ---- sections -------------------------------------------------------------------------------


def _summary(r: AgentReceipt) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    status_style = _STATUS_STYLE.get(r.status, "bold")
    grid.add_row("status", _t(r.status, status_style))
    grid.add_row("exit code", _t("-" if r.exit_code is None else r.exit_code))
    grid.add_row("verdict", _t(r.verdict or "-", _VERDICT_STYLE.get(r.verdict or "", "")))
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
    t = r.timings
    grid.add_row("started", _t(t.started_at))
    grid.add_row("ended", _t(t.ended_at or "-"))
    grid.add_row("duration", _t(format_ms(t.duration_ms)))
    grid.add_row("timeout", _t(f"{format_ms(r.timeout_ms)} per provider invocation"))
    grid.add_row("factory", _t(r.factory_version))
    return grid


def _phases(phases: list[PhaseRecord]) -> Group:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for p in phases:
        profile = p.profile if p.cli_version is None else f"{p.profile} {p.cli_version}"
        code = "-" if p.process_exit_code is None else str(p.process_exit_code)
        line = Text.assemble(
            _t(p.outcome, _VERDICT_STYLE.get(p.verdict or "", "")),
            f"  {format_ms(p.duration_ms)}  exit {code}  ",
            _t(profile),
            "\n",
            _t(f"observed: {p.observed_postcondition}", "dim"),
        )
        grid.add_row(_t(p.phase), line)
    if not phases:
        grid.add_row(_t("-"), _t("no phase ran"))
    return Group(Text("phases", style="bold"), grid)


def _candidate(label: str, c: CandidateRecord) -> Group:
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
    for f in rows:
        style = {"added": "green", "deleted": "red"}.get(f.state, "")
        table.add_row(
            _t(f.state, style),
            _t(f.path),
            _t(f.mode),
            _t(format_bytes(f.bytes)),
            _t(short_digest(f.sha256)),
        )
    parts: list[Any] = [head, table]
    if left_out:
        parts.append(_t(f"... and {left_out} more changed path(s)", "dim"))
    return Group(*parts)


def _all_evidence(r: AgentReceipt) -> list[tuple[str, EvidenceRef]]:
    refs: list[tuple[str, EvidenceRef]] = []
    for p in r.phases:
        refs.extend((e.role, e) for e in p.evidence)
    for label, c in (("initial", r.candidate.initial), ("repaired", r.candidate.repaired)):
        if c is not None:
            for ref in (c.status_evidence, c.patch_evidence):
                role = ref.role if ref.role.startswith(label) else f"{label} {ref.role}"
                refs.append((role, ref))
    if r.route_evidence is not None:
        refs.append((r.route_evidence.role, r.route_evidence))
    return refs


def _evidence(r: AgentReceipt) -> Group:
    table = Table(title="evidence", title_justify="left", expand=False)
    table.add_column("file", overflow="fold")
    table.add_column("size", no_wrap=True)
    table.add_column("sha256", no_wrap=True)
    everything = _all_evidence(r)
    rows, left_out = _capped(everything)
    for _, e in rows:
        table.add_row(_t(evidence_file(e)), _t(format_bytes(e.bytes)), _t(short_digest(e.sha256)))
    if not rows:
        table.add_row(*(_t("-") for _ in range(3)))
    media = sorted({e.media_type for _, e in everything})
    policies = sorted({e.policy for _, e in everything})
    parts: list[Any] = [table]
    if left_out:
        parts.append(_t(f"... and {left_out} more evidence file(s)", "dim"))
    parts.append(_t(f"evidence folder: {r.evidence_dir}", "dim"))
    parts.append(
        _t("'...' stands for the rest of the SHA-256; full paths are in the receipt", "dim")
    )
    if everything:
        parts.append(_t(f"media types: {', '.join(media)}; policy: {', '.join(policies)}", "dim"))
    return Group(*parts)


def _residuals(r: AgentReceipt) -> Group:
    lines = [Text("declared residuals", style="bold")]
    lines.extend(_t(f"- {item}") for item in r.residuals)
    if not r.residuals:
        lines.append(_t("- (none declared)", "red"))
    return Group(*lines)


def _revision(r: AgentReceipt) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    if r.revision is None:
        grid.add_row("revision", _t("none (a running reservation is not closed)", "cyan"))
        return grid
    consistent = r.compute_revision() == r.revision
    grid.add_row("revision", _t(r.revision))
    grid.add_row(
        "check",
        _t("body digest matches (consistency, not authorship)", "green")
        if consistent
        else _t("body digest DOES NOT MATCH: the receipt was edited", "bold red"),
    )
    return grid


# ---- entry points ---------------------------------------------------------------------------


def parse_receipt(receipt_json: Any) -> AgentReceipt:
    """Validate a decoded receipt JSON value.

    Raises:
        ReceiptInvalid: (``receipt-invalid``, exit 4) not a ``factory.agent-receipt/1``.
    """
    return parse_model(AgentReceipt, receipt_json, code=RECEIPT_INVALID, what="receipt")


def render_receipt(receipt: AgentReceipt, console: Console) -> None:
    """Print ``receipt`` on ``console`` (see the module docstring for the sections)."""
    style = _STATUS_STYLE.get(receipt.status, "bold")
    title = Text.assemble(("factory agent receipt  ", "bold"), (receipt.status.upper(), style))
    console.print(Panel(_summary(receipt), title=title, title_align="left", expand=False))
    if receipt.route == "rehearsal":
        console.print(
            Text(
                "REHEARSAL: this run used the scripted loopback model, not a real model. "
                "It proves the control path only, nothing about model judgement.",
                style="bold black on yellow",
            )
        )
    console.print()
    console.print(_phases(receipt.phases))
    for label, c in (
        ("initial", receipt.candidate.initial),
        ("repaired", receipt.candidate.repaired),
    ):
        if c is not None:
            console.print()
            console.print(_candidate(label, c))
    if receipt.candidate.initial is None and receipt.candidate.repaired is None:
        console.print(_t("candidate: none recorded", "dim"))
    console.print()
    console.print(_evidence(receipt))
    console.print()
    console.print(_residuals(receipt))
    console.print()
    console.print(_revision(receipt))


def render(receipt_json: dict[str, Any], console: Console) -> None:
    """Parse ``receipt_json`` with :class:`AgentReceipt` and render it on ``console``.

    Raises:
        ReceiptInvalid: (``receipt-invalid``, exit 4) the value is not a valid receipt.
    """
    render_receipt(parse_receipt(receipt_json), console)
