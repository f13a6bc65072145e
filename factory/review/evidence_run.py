"""``finalize --evidence-run -- ARGV…``: a command run by factory as final evidence (SPEC R).

The command runs under the project's one supervisor (:func:`factory.proc.run`: argv only,
its own session, an allow-listed environment, byte caps, a deadline, the whole process
tree swept) in the repository's top folder. The candidate tree is measured before and
after with the same snapshot as start: before, it must be the lineage's current candidate
(evidence about another tree is not evidence for this one); after, it must be unchanged
(a command that rewrites what it verifies is refused as evidence). What is bound: argv,
exit code, the SHA-256 and size of stdout and stderr (the bytes are stored as evidence
blobs, never in the state), truncation, both trees and the duration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import trio

from factory.documents.canonical import canonical_bytes_plain, sha256_hex, tagged_sha256
from factory.gitio.worktree import Worktree
from factory.proc import MIB, ProcessFailure, RunSpec, pick, run
from factory.review.documents import EVIDENCE_TAG
from factory.review.errors import (
    EVIDENCE_TREE_CHANGED,
    EVIDENCE_WRONG_TREE,
    EvidenceRunFailed,
    ReviewRefused,
)
from factory.review.machine import next_commands
from factory.review.policy import LoadedPolicy
from factory.review.snapshot import live_target
from factory.review.state import EvidenceRun, FinalEvidence, ReviewState

OUTPUT_CAP = 16 * MIB
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True, slots=True)
class RanEvidence:
    """The final evidence of a run, and the blobs to store beside the state."""

    evidence: FinalEvidence
    blobs: dict[str, bytes]


def _tree(wt: Worktree, state: ReviewState, policy: LoadedPolicy) -> str:
    init = state.initial_snapshot
    return live_target(wt, init.kind, init.base_tree, policy).snapshot.candidate_tree


def run_evidence(
    wt: Worktree,
    state: ReviewState,
    policy: LoadedPolicy,
    argv: tuple[str, ...],
    *,
    declared_failed: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> RanEvidence:
    """Run ``argv`` as evidence for ``state``'s current candidate.

    Raises:
        ReviewRefused: ``review-evidence-wrong-tree`` before running, when the checkout
            does not hold the lineage's current candidate.
        EvidenceRunFailed: it could not run to an exit, or it changed the candidate tree.
    """
    before = _tree(wt, state, policy)
    if before != state.current_snapshot.candidate_tree:
        raise ReviewRefused(
            "the checkout does not hold the candidate this lineage reviews; evidence run on "
            "it would prove nothing about that candidate",
            code=EVIDENCE_WRONG_TREE,
            next=next_commands(state),
        )
    spec = RunSpec(
        argv=list(argv),
        env=pick(os.environ),
        timeout_s=timeout_s,
        cwd=wt.root,
        stdout_cap=OUTPUT_CAP,
        stderr_cap=OUTPUT_CAP,
    )
    try:
        res = trio.run(run, spec)
    except ProcessFailure as exc:
        raise EvidenceRunFailed(
            f"the evidence command did not run to an exit ({exc.code}: {exc.fact}); "
            "nothing was recorded"
        ) from None
    after = _tree(wt, state, policy)
    if after != before:
        raise EVIDENCE_TREE_CHANGED(
            "the evidence command changed the candidate tree, so it is not evidence about "
            "this candidate (outputs may go to ignored paths); nothing was recorded"
        )
    doc = EvidenceRun(
        argv=argv,
        exit_code=res.exit_code,
        stdout_sha256=sha256_hex(res.stdout),
        stdout_bytes=len(res.stdout),
        stdout_truncated=res.stdout_truncated,
        stderr_sha256=sha256_hex(res.stderr),
        stderr_bytes=len(res.stderr),
        stderr_truncated=res.stderr_truncated,
        tree_before=before,
        tree_after=after,
        duration_ms=res.duration_ms,
    )
    data = canonical_bytes_plain(doc.to_json_value())
    evidence = FinalEvidence(
        evidence_hash=tagged_sha256(EVIDENCE_TAG, data),
        sha256=sha256_hex(data),
        bytes=len(data),
        source="run",
        run=doc,
        declared_failed=declared_failed,
    )
    blobs = {"evidence-run": data, "evidence-stdout": res.stdout, "evidence-stderr": res.stderr}
    return RanEvidence(evidence, blobs)
