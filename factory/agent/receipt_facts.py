"""What an operator's view of a receipt may say, decided once for the terminal and the page.

``factory receipt show`` verifies first (:func:`factory.agent.verify.verify`) and only
then renders; both renderers (terminal, :mod:`factory.agent.receipt_show`, and HTML,
:mod:`factory.agent.receipt_html`) take a :class:`ReceiptFacts` built here:

* the verification result: ``ok`` and the failed checks, each as a short phrase. A receipt
  that failed verification is rendered as *unverified claims*: no success colours, no
  reassuring line, the failure named first and last;
* what the reviewers said: the ``summary`` of each stored verdict file (the reviewer's own
  words, model output, untrusted), read only from evidence whose size and SHA-256 were
  just re-checked — an altered verdict file is named, never quoted;
* each candidate's bound patch (for ``--diff`` and the page), under the same rule.

Reading evidence here is bounded (:data:`TEXT_LIMIT`); nothing is parsed as instructions
and every string is left for the renderer to pass through the display sanitiser.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from factory.agent.evidence import read_nofollow, resolve_evidence_path
from factory.agent.receipt import AgentReceipt, EvidenceRef
from factory.agent.representation import RepresentationNote, describe
from factory.agent.verify import failed_checks
from factory.documents.canonical import sha256_hex

#: The most bytes read from one evidence file for display (a patch or a verdict).
TEXT_LIMIT: Final = 4 << 20
MODEL_OUTPUT_LABEL: Final = "model output, untrusted: the reviewer's own words, not a fact"


@dataclass(frozen=True, slots=True)
class ReviewNote:
    """One review's verdict and the reviewer's stated reasons (or why they are not shown)."""

    phase: str
    verdict: str | None
    summary: str | None
    withheld: str | None = None
    #: What the reviewer wrote (its stdout), when no verdict could be read from it.
    wrote: str | None = None


@dataclass(frozen=True, slots=True)
class PatchText:
    """A candidate's bound patch as text (or why it is not shown)."""

    label: str
    text: str | None
    withheld: str | None = None


@dataclass(frozen=True, slots=True)
class MutationNote:
    """The paths a phase saw changed where it must not (a voided review, a worker's git
    mutation), from its ``<phase>-mutation-paths`` evidence (or why they are not shown)."""

    phase: str
    outcome: str
    paths: list[str] | None
    withheld: str | None = None


@dataclass(frozen=True, slots=True)
class ReceiptFacts:
    """A receipt, its verification and what may be quoted from its verified evidence."""

    receipt: AgentReceipt
    verified: bool
    failed: list[str]
    report: Mapping[str, Any]
    reviews: list[ReviewNote] = field(default_factory=list)
    patches: list[PatchText] = field(default_factory=list)
    mutations: list[MutationNote] = field(default_factory=list)
    checked_at: str | None = None
    receipt_path: Path | None = None

    @property
    def evidence_checked(self) -> int:
        return len(self.report.get("evidence", []))

    @property
    def representation(self) -> RepresentationNote | None:
        """Where the judged candidate is now, in words (:mod:`factory.agent.representation`)."""
        return describe(self.report.get("representation"))

    def candidate_note(self) -> str:
        """What the live-worktree re-derivation said, in words."""
        rep = self.representation
        if rep is not None and rep.state in ("committed", "committed-then-changed"):
            return "the judged candidate is " + rep.sentence.partition(":")[0]
        cand = self.report.get("candidate", {})
        if cand.get("still_matches") is True:
            return "the worktree still holds the judged candidate"
        if cand.get("still_matches") is False and cand.get("gating", True) is False:
            return (
                "the worktree no longer holds the last bound candidate; a "
                f"{self.receipt.status} run does not claim it does"
            )
        if cand.get("still_matches") is False:
            return "the worktree no longer holds the judged candidate"
        reason = cand.get("reason")
        if reason == "worktree-gone":
            return "the worktree is gone: the candidate was not re-derived"
        return "no candidate to re-derive"


def _verified_paths(report: Mapping[str, Any]) -> set[str]:
    return {e["path"] for e in report.get("evidence", []) if e.get("ok")}


def _read_verified(
    ref: EvidenceRef | None, receipt_path: Path, ok_paths: set[str]
) -> tuple[bytes | None, str | None]:
    if ref is None:
        return None, "no evidence recorded"
    if ref.path not in ok_paths:
        return None, "not shown: this evidence file failed verification"
    if ref.bytes > TEXT_LIMIT:
        return None, f"not shown: larger than {TEXT_LIMIT >> 20} MiB (see the evidence file)"
    try:
        data = read_nofollow(resolve_evidence_path(ref, receipt_path), limit=TEXT_LIMIT)
    except OSError:
        return None, "not shown: the evidence file could not be read"
    if sha256_hex(data) != ref.sha256:  # changed since it was verified a moment ago
        return None, "not shown: this evidence file changed while it was being shown"
    return data, None


def _summary_of(data: bytes) -> str | None:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    summary = value.get("summary") if isinstance(value, dict) else None
    return summary if isinstance(summary, str) else None


def review_notes(
    receipt: AgentReceipt, receipt_path: Path, report: Mapping[str, Any]
) -> list[ReviewNote]:
    """The reasons each reviewer gave, from its verified verdict evidence."""
    ok_paths = _verified_paths(report)
    notes = []
    for phase in receipt.phases:
        if phase.role != "reviewer":
            continue
        ref = next((e for e in phase.evidence if e.role.endswith("-verdict")), None)
        data, withheld = _read_verified(ref, receipt_path, ok_paths)
        summary = _summary_of(data) if data is not None else None
        if data is not None and summary is None:
            withheld = "the verdict file holds no summary"
        wrote = None
        if summary is None:
            out = next((e for e in phase.evidence if e.role.endswith("-stdout")), None)
            raw, _ = _read_verified(out, receipt_path, ok_paths) if out else (None, None)
            wrote = raw.decode("utf-8", "replace") if raw else None
        notes.append(ReviewNote(phase.phase, phase.verdict, summary, withheld, wrote))
    return notes


def patch_texts(
    receipt: AgentReceipt, receipt_path: Path, report: Mapping[str, Any]
) -> list[PatchText]:
    """Each candidate's patch (initial, repaired), from verified evidence only."""
    ok_paths = _verified_paths(report)
    out = []
    for label, cand in (
        ("initial", receipt.candidate.initial),
        ("repaired", receipt.candidate.repaired),
    ):
        if cand is None:
            continue
        data, withheld = _read_verified(cand.patch_evidence, receipt_path, ok_paths)
        text = data.decode("utf-8", "surrogateescape") if data is not None else None
        out.append(PatchText(label, text, withheld))
    return out


MUTATION_ROLE_SUFFIX: Final = "-mutation-paths"


def mutation_notes(
    receipt: AgentReceipt, receipt_path: Path, report: Mapping[str, Any]
) -> list[MutationNote]:
    """Each phase's recorded mutation paths (NUL-terminated path bytes), verified first."""
    ok_paths = _verified_paths(report)
    notes = []
    for phase in receipt.phases:
        ref = next((e for e in phase.evidence if e.role.endswith(MUTATION_ROLE_SUFFIX)), None)
        if ref is None:
            continue
        data, withheld = _read_verified(ref, receipt_path, ok_paths)
        paths = None
        if data is not None:
            paths = [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0") if p]
        notes.append(MutationNote(phase.phase, phase.outcome, paths, withheld))
    return notes


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gather(
    receipt: AgentReceipt,
    report: Mapping[str, Any],
    receipt_path: Path,
    *,
    now: Callable[[], str] = _utc_now,
) -> ReceiptFacts:
    """Everything a renderer needs, from a receipt and its ``verify`` report; ``now`` gives
    the time the check was made (shown beside the integrity line)."""
    ok = report.get("ok") is True
    return ReceiptFacts(
        receipt=receipt,
        verified=ok,
        failed=[] if ok else failed_checks(dict(report)),
        report=report,
        reviews=review_notes(receipt, receipt_path, report),
        patches=patch_texts(receipt, receipt_path, report),
        mutations=mutation_notes(receipt, receipt_path, report),
        checked_at=now(),
        receipt_path=receipt_path,
    )
