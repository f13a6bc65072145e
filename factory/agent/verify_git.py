"""The checks of ``factory receipt verify`` that need the repository (SPEC A-8; issue 8 §3).

* :func:`check_patches`: each bound candidate's stored patch, applied to its base tree,
  must reproduce the candidate tree and every bound file — its mode and the SHA-256 of its
  bytes, deletions included — and change no other path. A receipt whose per-file
  SHA-256 came from one set of bytes and whose patch from another (e.g. a clean filter
  that rewrote the bytes before they were stored) fails here.
* :func:`check_candidate`: the judged candidate re-derived from the live worktree, against
  the same entry baseline the run used (``base.entry_divergence``).

Neither runs a program the repository names: both go through :mod:`factory.gitio`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from factory.agent.evidence import read_nofollow, resolve_evidence_path
from factory.agent.receipt import AgentReceipt, CandidateRecord
from factory.agent.verification import CandidateCheck, PatchCheck
from factory.errors import FactoryError

if TYPE_CHECKING:
    from factory.gitio.snapshot import Baseline


def _labelled(receipt: AgentReceipt) -> list[tuple[str, CandidateRecord]]:
    pairs = [("initial", receipt.candidate.initial), ("repaired", receipt.candidate.repaired)]
    return [(label, c) for label, c in pairs if c is not None]


def _replay_problem(root: Path, cand: CandidateRecord, receipt_path: Path) -> str | None:
    from factory.gitio.replay import replay_patch

    try:
        patch = read_nofollow(resolve_evidence_path(cand.patch_evidence, receipt_path))
    except OSError:
        return "patch-evidence-unreadable"
    body = cand.body
    replayed = replay_patch(root, body.base_tree, patch)
    if replayed is None:
        return "patch-does-not-apply-to-base"
    if replayed.tree != body.candidate_tree:
        return "patch-does-not-produce-candidate-tree"
    bound = {
        f.path.encode("utf-8"): (f.mode, f.sha256) if f.state != "deleted" else None
        for f in body.files
    }
    if bound != replayed.files:
        return "patch-does-not-reproduce-bound-files"
    return None


def check_patches(receipt: AgentReceipt, receipt_path: Path) -> list[PatchCheck]:
    """One entry per bound candidate: ``{candidate, checked, ok, problem|reason}``."""
    from factory.gitio.worktree import locate

    out: list[PatchCheck] = []
    for label, cand in _labelled(receipt):
        if not Path(receipt.worktree).is_dir():
            out.append(PatchCheck(candidate=label, checked=False, ok=None, reason="worktree-gone"))
            continue
        try:
            problem = _replay_problem(locate(Path(receipt.worktree)).root, cand, receipt_path)
        except FactoryError as exc:
            problem = exc.code
        out.append(PatchCheck(candidate=label, checked=True, ok=problem is None, problem=problem))
    return out


# The receipt claims the worktree still holds the judged candidate only when a verdict
# ended the run; after a failure or an interruption (e.g. during the repair) it may hold
# anything, so a mismatch is reported there, never held against the receipt.
_CLAIMS_CANDIDATE = ("completed", "rejected")


def _baseline(receipt: AgentReceipt, receipt_path: Path) -> Baseline | None:
    from factory.gitio.snapshot import Baseline, decode_divergence

    ref = receipt.base.entry_divergence if receipt.base is not None else None
    if ref is None:
        return None
    data = read_nofollow(resolve_evidence_path(ref, receipt_path))
    return Baseline(decode_divergence(data))


def check_candidate(receipt: AgentReceipt, receipt_path: Path) -> CandidateCheck:
    """Re-derive the judged candidate from the live worktree, when it still exists.

    ``gating`` says whether a mismatch fails the verification (see :data:`_CLAIMS_CANDIDATE`).
    """
    return live_candidate(receipt, receipt_path).check


@dataclass(frozen=True, slots=True)
class Live:
    """:func:`live_candidate`'s result: the check, the raw tree the worktree holds (when
    it could be derived) and, when it could not, the error code."""

    check: CandidateCheck
    tree: str | None = None
    problem: str | None = None


def live_candidate(receipt: AgentReceipt, receipt_path: Path) -> Live:
    """:func:`check_candidate`, keeping the live worktree's raw tree for the
    representation check (:mod:`factory.agent.representation`)."""
    from factory.agent.identity import candidate_body
    from factory.gitio.candidate import derive
    from factory.gitio.worktree import locate

    cand = receipt.final_candidate()
    gating = receipt.status in _CLAIMS_CANDIDATE
    identity = cand.identity if cand else None
    if cand is None or not Path(receipt.worktree).is_dir():
        reason = "no-candidate-in-receipt" if cand is None else "worktree-gone"
        return Live(CandidateCheck(checked=False, identity=identity, gating=gating, reason=reason))
    try:
        wt = locate(Path(receipt.worktree))
        body = cand.body
        baseline = _baseline(receipt, receipt_path)
        derived = derive(wt, body.base_commit, body.base_tree, baseline)
        observed = candidate_body(derived).identity()
    except (FactoryError, OSError, ValueError) as exc:
        code = exc.code if isinstance(exc, FactoryError) else "entry-divergence-unreadable"
        check = CandidateCheck(
            checked=True, identity=identity, gating=gating, still_matches=False, reason=code
        )
        return Live(check, problem=code)
    matches = observed == cand.identity
    if matches or gating:
        check = CandidateCheck(
            checked=True, identity=identity, gating=gating, observed=observed, still_matches=matches
        )
        return Live(check, derived.candidate_tree)
    check = CandidateCheck(
        checked=True,
        identity=identity,
        gating=gating,
        observed=observed,
        still_matches=matches,
        reason=f"not-claimed-after-{receipt.status}",
    )
    return Live(check, derived.candidate_tree)
