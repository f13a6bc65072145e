"""The ``factory.receipt-verification/1`` document (SPEC A-8): what ``factory receipt
verify`` found, check by check. Pure models; :mod:`factory.agent.verify` fills them.

Optional keys are absent unless the check set them (:class:`~factory.models.SparseModel`),
so the bytes are those the verification has always written.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from factory.agent.receipt import Status
from factory.agent.representation import Representation
from factory.models import SparseModel, StrictModel

VERIFY_SCHEMA: Final = "factory.receipt-verification/1"
Liveness = Literal["running", "abandoned", "unknown"]


class RevisionCheck(StrictModel):
    """The stored revision against the digest recomputed from the body."""

    ok: bool
    stored: str | None
    computed: str


class EvidenceCheck(StrictModel):
    """One evidence file re-hashed; ``problem`` names what is wrong (``None``: nothing)."""

    role: str
    path: str
    ok: bool
    problem: str | None


class PatchCheck(SparseModel):
    """A bound candidate's stored patch replayed on its base (``reason`` when it could not
    be checked, ``problem`` when it was)."""

    candidate: str
    checked: bool
    ok: bool | None
    reason: str | None = None
    problem: str | None = None


class CandidateCheck(SparseModel):
    """The judged candidate re-derived from the live worktree, when it still exists;
    ``gating``: whether a mismatch fails the verification."""

    checked: bool
    identity: str | None
    gating: bool
    observed: str | None = None
    still_matches: bool | None = None
    reason: str | None = None


_UNFINISHED: Final[dict[str | None, str]] = {
    "abandoned": "abandoned: the factory process that wrote it is gone, the run will never "
    "finish (status running)",
    "running": "the run is still in progress (status running)",
    None: "the run never finished (status running)",
}


class ReceiptVerification(StrictModel):
    """``factory.receipt-verification/1``; ``ok`` only when every check held."""

    schema_id: Literal["factory.receipt-verification/1"] = Field(
        default=VERIFY_SCHEMA, alias="schema"
    )
    receipt: str
    status: Status
    exit_code: int | None
    route: Literal["subscription", "rehearsal", "api"]
    execution: str
    terminal: bool
    liveness: Liveness | None
    revision: RevisionCheck
    canonical_bytes: bool
    consistency_problems: list[str]
    evidence: list[EvidenceCheck]
    patches: list[PatchCheck]
    candidate: CandidateCheck
    ok: bool
    representation: Representation | None = None
    """Where the judged candidate is now (:mod:`factory.agent.representation`): a commit of
    it is the same candidate, not a mismatch. ``None`` when the worktree was not asked
    (``factory receipt apply`` proves the patch itself) and in reports from before it
    existed."""

    def candidate_mismatch(self) -> bool:
        """A receipt that claims the worktree holds its candidate, whose worktree holds
        neither it nor a commit of it (without the representation: the identity alone)."""
        if not self.candidate.gating:
            return False
        if self.representation is None:
            return self.candidate.still_matches is False
        return self.representation.state == "mismatch"

    def failed_checks(self) -> list[str]:
        """Which checks failed, one short phrase each (observed: exit 4 with nothing on
        stderr left a user to read the JSON)."""
        failed: list[str] = []
        if not self.revision.ok:
            failed.append("revision does not match the body")
        if not self.canonical_bytes:
            failed.append("bytes are not the canonical form")
        if not self.terminal:
            failed.append(_UNFINISHED.get(self.liveness, _UNFINISHED[None]))
        failed.extend(f"inconsistent: {p}" for p in self.consistency_problems)
        failed.extend(f"evidence {e.role}: {e.problem}" for e in self.evidence if not e.ok)
        failed.extend(
            f"{p.candidate} candidate: {p.problem}" for p in self.patches if p.ok is False
        )
        if self.candidate_mismatch():
            failed.append(mismatch_phrase(self.representation))
        return failed or ["see the JSON on stdout"]


def mismatch_phrase(rep: Representation | None) -> str:
    """The failed check of a candidate mismatch, naming the differing paths when known."""
    text = "the worktree holds neither the judged candidate nor a commit of it"
    if rep is None or rep.differing_paths is None:
        return text
    if not rep.differing_paths and not rep.paths_left_out:
        return f"{text} (the files are the candidate's; HEAD does not commit them on the base)"
    shown = ", ".join(rep.differing_paths[:5])
    more = len(rep.differing_paths) - 5 + (rep.paths_left_out or 0)
    return f"{text} (differing paths: {shown}{f' and {more} more' if more > 0 else ''})"
