"""The candidate part of ``factory receipt show`` (SPEC A-8): each candidate's identity and
changed files, the paths a phase changed where it must not, and with ``--diff`` the bound
patches — and the small rich helpers every section of :mod:`factory.agent.receipt_show`
shares (sanitised plain text, success colours only for a verified receipt, capped lists).
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from factory.agent.receipt import CandidateRecord
from factory.agent.receipt_facts import ReceiptFacts
from factory.agent.receipt_text import (
    MAX_DIFF_LINES,
    MAX_ROWS,
    clean,
    format_bytes,
    short_digest,
)
from factory.display import inert_lines
from factory.whole_line import Whole


def plain(value: object, style: str = "") -> Text:
    """``value`` as sanitised plain text (never rich markup)."""
    return Text(clean(str(value)), style=style)


def ok_style(style: str, trusted: bool) -> str:
    """A success colour only for a verified receipt: an unverified one looks plain."""
    return style if trusted else ""


def capped(items: list[Any]) -> tuple[list[Any], int]:
    """The first :data:`MAX_ROWS` items, and how many were left out."""
    return items[:MAX_ROWS], max(0, len(items) - MAX_ROWS)


def _candidate(label: str, c: CandidateRecord, trusted: bool) -> Group:
    b = c.body
    head = Text.assemble(
        (f"{label} candidate ", "bold"),
        plain(short_digest(c.identity, 16)),
        "  tree ",
        plain(short_digest(b.candidate_tree)),
        f"\n  patch {format_bytes(b.patch_bytes)}  {len(b.files)} changed path(s)",
    )
    table = Table(expand=False, show_edge=False)
    for name in ("state", "path", "mode", "size", "sha256"):
        table.add_column(name, overflow="fold")
    rows, left_out = capped(b.files)
    for file in rows:
        style = {"added": ok_style("green", trusted), "deleted": "red"}.get(file.state, "")
        table.add_row(
            plain(file.state, style),
            plain(file.path),
            plain(file.mode),
            plain(format_bytes(file.bytes)),
            plain(short_digest(file.sha256)),
        )
    parts: list[Any] = [head, table]
    if left_out:
        parts.append(plain(f"... and {left_out} more changed path(s)", "dim"))
    if c.conversions_differ:
        parts.append(
            plain(
                "  WARNING: the repository's own conversions (end of line, ident, encoding, "
                "a clean filter) would store other bytes for a changed file: a plain git add "
                "would not commit what was reviewed",
                "bold yellow",
            )
        )
    for group in c.collisions[:MAX_ROWS]:
        names = " | ".join(group.paths)
        parts.append(
            plain(f"  WARNING: {group.kind} collision (one file on macOS/Windows): {names}")
        )
    return Group(*parts)


def mutations_section(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    if not f.mutations:
        return []
    out: list[RenderableType] = [Text("paths changed where a phase must not change them", "bold")]
    for note in f.mutations:
        out.append(Text.assemble("  ", plain(note.phase, "bold"), " ", plain(note.outcome, "red")))
        if note.paths is None:
            out.append(plain(f"    {note.withheld}", "dim"))
            continue
        if not note.paths:
            out.append(plain("    no bound path changed; the candidate identity did", "dim"))
        rows, left_out = capped(note.paths)
        out.extend(plain(f"    {path}") for path in rows)
        if left_out:
            out.append(plain(f"    ... and {left_out} more path(s)", "dim"))
    return out


def candidates_section(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    r = f.receipt
    out: list[RenderableType] = []
    for label, c in (("initial", r.candidate.initial), ("repaired", r.candidate.repaired)):
        if c is not None:
            if out:
                out.append(Text())
            out.append(_candidate(label, c, trusted))
    return out or [plain("candidate: none recorded", "dim")]


def diff_lines(text: str, *, trusted: bool = True, limit: int = MAX_DIFF_LINES) -> list[Whole]:
    """A patch as inert, coloured lines (additions green, deletions red), capped; an
    unverified receipt's patch gets no green."""
    out: list[Whole] = []
    for line in inert_lines(text.removesuffix("\n"), max_lines=limit):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = ok_style("green", trusted)
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(Whole(line, style=style))  # a patch line is never broken by rich
    return out


def diff_section(f: ReceiptFacts, trusted: bool) -> list[RenderableType]:
    out: list[RenderableType] = []
    for patch in f.patches:
        out.append(Text(f"{patch.label} candidate patch (bound evidence)", style="bold"))
        if patch.text is None:
            out.append(plain(f"  {patch.withheld}", "dim"))
        else:
            out.extend(diff_lines(patch.text, trusted=trusted))
    return out
