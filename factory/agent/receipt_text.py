"""The words both receipt renderers share (terminal: :mod:`factory.agent.receipt_show`,
HTML: :mod:`factory.agent.receipt_html`): digests, sizes and durations for display, evidence
file names, and the notes on liveness, swept processes and truncated streams — pure
functions of the receipt, so the two views say the same thing (SPEC A-8).
"""

from __future__ import annotations

from typing import Final

from factory.agent.evidence import resolve_evidence_path
from factory.agent.receipt import AgentReceipt, EvidenceRef, PhaseRecord
from factory.agent.receipt_facts import ReceiptFacts
from factory.display import inert

MAX_ROWS: Final = 200
MAX_TASK_CHARS: Final = 2000
MAX_DIFF_LINES: Final = 2000


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


_OUTCOME: Final = {
    "completed": ("COMPLETED", "bold green"),
    "rejected": ("REJECTED", "bold black on yellow"),
    "failed": ("FAILED", "bold white on red"),
    "interrupted": ("INTERRUPTED", "bold white on magenta"),
    "running": ("IN PROGRESS", "bold black on cyan"),
}


def headline(f: ReceiptFacts) -> tuple[str, str]:
    """The one line a receipt view leads with, and its rich style (issue 28 §1).

    Integrity and outcome are two facts; the headline joins them so neither can be misread
    for the other, and it is coloured by the outcome: ``Run FAILED — receipt intact``,
    ``Run APPROVED — receipt intact``; a receipt that failed verification has no outcome
    worth naming: ``Receipt does NOT verify``.
    """
    if not f.verified:
        return "Receipt does NOT verify", "bold white on red"
    r = f.receipt
    word, style = _OUTCOME.get(r.status, (r.status.upper(), "bold"))
    if r.status == "completed" and r.verdict == "APPROVE":
        word = "APPROVED"
    return f"Run {word} — receipt intact", style


def evidence_place(f: ReceiptFacts) -> str:
    """Where this receipt's evidence is, said of the receipt file being shown.

    Evidence references resolve against the receipt's own folder, so a copied receipt
    names the folder beside the copy; when nothing is there it says so, rather than
    pointing at the folder the original run recorded.
    """
    r = f.receipt
    refs = [e for _, e in evidence_rows(r)]
    if f.receipt_path is None or not refs:
        return f"evidence folder: {clean(r.evidence_dir)}"
    here = resolve_evidence_path(refs[0], f.receipt_path).parent
    if here.is_dir():
        return f"evidence folder: {clean(str(here))}"
    return (
        f"evidence folder: NOT beside this receipt (looked in {clean(str(here))}; "
        f"the run recorded {clean(r.evidence_dir)})"
    )


def liveness_note(f: ReceiptFacts) -> tuple[str, str] | None:
    """For a ``running`` receipt: its liveness (``running``, ``abandoned``, ``unknown``, as
    ``receipt verify`` judged it) and what that means in words; None for a terminal one."""
    if f.receipt.status != "running":
        return None
    state = str(f.report.get("liveness") or "unknown")
    proc = f.receipt.factory_process
    pid = proc.pid if proc is not None else None
    if state == "abandoned":
        words = (
            f"ABANDONED: the factory process that wrote it (pid {pid}) is gone; this run will "
            "never finish"
        )
    elif state == "running":
        words = f"in progress: the factory process (pid {pid}) is still running"
    else:
        state, words = "unknown", "unknown: the receipt names no process this system can check"
    return state, words


def sweep_note(p: PhaseRecord) -> str | None:
    """What the phase record says about leftover processes of its CLI (issue 8 §4), or
    None when none was swept. ``swept_processes`` is None when no CLI run got that far."""
    if not p.swept_processes:
        return None
    return (
        f"swept: {p.swept_processes} leftover process(es) of the CLI were frozen and killed "
        "after it ended; what they wrote before is in the worktree"
    )


def truncation_note(e: EvidenceRef) -> str | None:
    """``TRUNCATED: <true length> written`` for a stream kept only up to its cap."""
    if not e.truncated:
        return None
    return f"TRUNCATED: {format_bytes(e.stream_bytes)} written"


def evidence_rows(r: AgentReceipt) -> list[tuple[str, EvidenceRef]]:
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
