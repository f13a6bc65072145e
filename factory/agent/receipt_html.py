"""``factory receipt show R --html OUT.html``: one self-contained page (issue 9 §3).

The page says what the terminal view says (:mod:`factory.agent.receipt_show`), in the same
order: the verification result first (a failed one in red, first and last), the outcome
and the route (a rehearsal in a yellow banner), a timeline of the phases with durations
and verdicts, what the reviewers said (labelled as model output), each candidate's changed
files and its bound patch per file with additions and deletions highlighted, the evidence
table, the residuals and the revision.

Built with Jinja2 (``templates/receipt.html.j2``) with autoescaping on, and every value
printed passes the display sanitiser first (the environment's ``finalize``), so a hostile
file name, task or reviewer text is inert twice over: HTML cannot be injected, and bidi or
invisible characters are shown as visible escapes instead of reordering the page. The page
loads nothing: CSS is inline, there is no script, and a Content-Security-Policy of
``default-src 'none'`` forbids any fetch even if a browser were tricked into trying.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from factory import __version__
from factory.agent.receipt import AgentReceipt, CandidateRecord
from factory.agent.receipt_facts import PatchText, ReceiptFacts
from factory.agent.receipt_text import (
    MAX_DIFF_LINES,
    MAX_ROWS,
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
from factory.display import inert

if TYPE_CHECKING:
    import jinja2

TEMPLATE: Final = "receipt.html.j2"


def _finalize(value: Any) -> Any:
    # Every {{ }} value: untrusted text is made inert before autoescaping sees it. Markup
    # is the template's own already-escaped output (a macro call), passed through.
    from markupsafe import Markup

    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return value
    return inert(str(value), limit=2000)


def environment() -> jinja2.Environment:
    """The Jinja2 environment: package templates, autoescaping on, sanitising finalize."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("factory.agent", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class FileDiff:
    name: str
    added: int
    deleted: int
    lines: list[DiffLine]


def _kind(line: str) -> str:
    if line.startswith(("+++", "---", "diff --git", "index ", "new file", "deleted file")):
        return "meta"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith("@@"):
        return "hunk"
    return ""


def _file_chunks(text: str) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in text.removesuffix("\n").split("\n"):
        if line.startswith("diff --git ") and chunk:
            yield chunk
            chunk = []
        chunk.append(line)
    if chunk:
        yield chunk


def split_patch(text: str, limit: int = MAX_DIFF_LINES) -> list[FileDiff]:
    """A git patch as one :class:`FileDiff` per file (lines kept raw; the page sanitises)."""
    out = []
    budget = limit
    for chunk in _file_chunks(text):
        name = chunk[0].removeprefix("diff --git ")
        added = sum(1 for ln in chunk if ln.startswith("+") and not ln.startswith("+++"))
        deleted = sum(1 for ln in chunk if ln.startswith("-") and not ln.startswith("---"))
        shown = chunk[: max(0, budget)]
        budget -= len(shown)
        lines = [DiffLine(_kind(ln), ln) for ln in shown]
        if len(shown) < len(chunk):
            lines.append(DiffLine("meta", f"… ({len(chunk) - len(shown)} more lines)"))
        out.append(FileDiff(name, added, deleted, lines))
    return out


def _summary(r: AgentReceipt) -> list[tuple[str, str]]:
    rows = [
        ("status", r.status),
        ("exit code", "-" if r.exit_code is None else str(r.exit_code)),
        ("verdict", r.verdict or "-"),
    ]
    if r.error is not None:
        rows.append(("error", f"{r.error.code}: {r.error.message}"))
    rows += [("route", r.route), ("execution", r.execution), ("task", r.task)]
    rows.append(("worktree", r.worktree))
    if r.base is not None:
        rows.append(("base", f"commit {r.base.commit}  tree {r.base.tree}"))
        rows.append(("branch", r.base.branch or "(detached HEAD)"))
    rows += [
        ("started", r.timings.started_at),
        ("ended", r.timings.ended_at or "-"),
        ("duration", format_ms(r.timings.duration_ms)),
        ("timeout", f"{format_ms(r.timeout_ms)} per provider invocation"),
    ]
    if r.trace_id is not None:
        rows.append(("trace id", f"{r.trace_id} (OpenTelemetry)"))
    return rows


def _phases(r: AgentReceipt, trusted: bool) -> list[dict[str, Any]]:
    longest = max((p.duration_ms for p in r.phases), default=0) or 1
    out = []
    for p in r.phases:
        bar = p.verdict or ("failure" if p.outcome != "ok" else "")
        if not trusted and bar == "APPROVE":
            bar = ""  # no success colour on an unverified receipt
        out.append(
            {
                "phase": p.phase,
                "outcome": p.outcome,
                "duration": format_ms(p.duration_ms),
                "exit": "-" if p.process_exit_code is None else p.process_exit_code,
                "profile": p.profile if p.cli_version is None else f"{p.profile} {p.cli_version}",
                "bar_class": bar,
                "percent": max(1, round(100 * p.duration_ms / longest)),
                "observed": p.observed_postcondition,
                "swept": sweep_note(p),
            }
        )
    return out


def _candidate(label: str, c: CandidateRecord, patch: PatchText | None) -> dict[str, Any]:
    files = [
        {
            "state": f.state,
            "path": f.path,
            "mode": f.mode,
            "size": format_bytes(f.bytes),
            "sha256": short_digest(f.sha256),
        }
        for f in c.body.files[:MAX_ROWS]
    ]
    diffs = split_patch(patch.text) if patch is not None and patch.text is not None else []
    return {
        "label": label,
        "identity": c.identity,
        "files": files,
        "left_out": max(0, len(c.body.files) - MAX_ROWS),
        "diffs": diffs,
        "withheld": patch.withheld if patch is not None else "not recorded",
        "warnings": (
            [
                "the repository's own conversions would store other bytes for a changed file: "
                "a plain git add would not commit what was reviewed"
            ]
            if c.conversions_differ
            else []
        )
        + [
            f"{g.kind} collision (one file on macOS/Windows): {' | '.join(g.paths)}"
            for g in c.collisions[:MAX_ROWS]
        ],
    }


def _representation(facts: ReceiptFacts) -> dict[str, Any] | None:
    """Where the judged candidate is now (issue 22), as the terminal view says it."""
    note = facts.representation
    if note is None:
        return None
    return {
        "state": note.state,
        "sentence": note.sentence,
        "label": note.paths_label,
        "paths": list(note.paths[:MAX_ROWS]),
        "left_out": note.left_out + max(0, len(note.paths) - MAX_ROWS),
        "bad": note.bad,
    }


def context(facts: ReceiptFacts, receipt_path: Path) -> dict[str, Any]:
    """The template's variables (raw strings: the environment sanitises on output)."""
    r = facts.receipt
    patches = {p.label: p for p in facts.patches}
    candidates = [
        _candidate(label, c, patches.get(label))
        for label, c in (("initial", r.candidate.initial), ("repaired", r.candidate.repaired))
        if c is not None
    ]
    checks = {e["path"]: e for e in facts.report.get("evidence", [])}
    evidence = []
    for _, e in evidence_rows(r)[:MAX_ROWS]:
        check = checks.get(e.path, {})
        ok = check.get("ok", True) is True
        evidence.append(
            {
                "file": evidence_file(e),
                "size": format_bytes(e.bytes),
                "sha256": short_digest(e.sha256),
                "truncated": truncation_note(e),
                "ok": ok,
                "check": "re-hashed, matches" if ok else f"FAILED: {check.get('problem')}",
            }
        )
    reviews = [
        {
            "phase": n.phase,
            "verdict": n.verdict or "-",
            "lines": n.summary.split("\n")[:200] if n.summary is not None else None,
            "withheld": n.withheld,
        }
        for n in facts.reviews
    ]
    return {
        "title": f"factory receipt: {r.status}"
        + (" (REHEARSAL)" if r.route == "rehearsal" else ""),
        "verified": facts.verified,
        "headline": headline(facts)[0],
        "headline_class": f"outcome-{r.status}" if facts.verified else "outcome-unverified",
        "checked_at": facts.checked_at or "an unrecorded time",
        "check_again": shlex.join(["factory", "receipt", "verify", str(receipt_path)]),
        "verified_text": f"revision, canonical bytes and {facts.evidence_checked} evidence "
        f"file(s) re-checked; {facts.candidate_note()} (consistency, not authorship)",
        "failed": facts.failed,
        "status_upper": r.status.upper(),
        "status_class": f"status-{r.status}" if facts.verified else "plain",
        "rehearsal": r.route == "rehearsal",
        "liveness": liveness_note(facts),
        "representation": _representation(facts),
        "summary": _summary(r),
        "phases": _phases(r, facts.verified),
        "reviews": reviews,
        "candidates": candidates,
        "mutations": [
            {
                "phase": m.phase,
                "outcome": m.outcome,
                "paths": (m.paths or [])[:MAX_ROWS],
                "withheld": m.withheld,
            }
            for m in facts.mutations
        ],
        "evidence": evidence,
        "evidence_place": evidence_place(facts),
        "policies": ", ".join(sorted({e.policy for _, e in evidence_rows(r)})) or "-",
        "residuals": r.residuals,
        "revision": r.revision or "none (a running reservation is not closed)",
        "version": __version__,
        "receipt_path": str(receipt_path),
    }


def render_html(facts: ReceiptFacts, receipt_path: Path) -> str:
    """The page as text."""
    text: str = environment().get_template(TEMPLATE).render(context(facts, receipt_path))
    return text
