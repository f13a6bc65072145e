"""The prompt of one lens: the binding start issued, the lens's concern, the output rules
and the candidate as data (SPEC R).

The binding block comes first and verbatim, so the judgement is tied to the lineage, the
frozen target, the lens and its position by the party that froze them — never retyped.
"""

from __future__ import annotations

from factory.agent.prompts import data_block
from factory.review.results import binding_text
from factory.review.state import ReviewState

PATCH_INLINE_LIMIT = 100_000

LENS_CONCERN = {
    "risk": "security and safety: authentication, authorization, secrets, money, data loss, "
    "irreversible or privileged effects, unsafe input handling",
    "resilience": "behaviour under failure: errors, timeouts, retries, partial failure, "
    "resource cleanup, concurrency, degraded dependencies",
    "readability": "whether a maintainer can understand and safely change it: naming, "
    "structure, comments and docs that match the behaviour",
    "reliability": "correctness: the intended behaviour, edge cases, regressions, and tests "
    "that prove the behaviour",
}

RULES = """\
Rules:
- You are read-only: do not modify any file, the index, HEAD, refs or git configuration.
- Judge only this candidate (base tree -> candidate tree below), only for your concern.
- Answer with one JSON object in the required output schema:
  findings: a list (possibly empty); each finding has
    location: "path:line" where path is one of the changed paths below;
    severity: BLOCKER, CRITICAL, WARNING or SUGGESTION;
    claim: what is wrong, concretely;
    proof_refs: concrete references another person can check (a test and its result,
      a diff hunk, a command and its output) - never "n/a", "todo" or "passed";
    evidence_class: deterministic (reproduced), inferential (argued from reading) or
      insufficient - required for BLOCKER and CRITICAL, else null;
    causal_disposition: introduced, behavior-activated or worsened (the candidate caused
      it), pre-existing or base-only (it was there before), or unknown - required for
      BLOCKER and CRITICAL, else null.
  evidence: what you inspected, concretely (at least one entry).
  lens: your lens name or null. binding: the binding digest above or null.
- Do not number findings or compute hashes: the factory assigns ids.
"""


def _candidate(state: ReviewState, patch: bytes | None) -> str:
    snap = state.initial_snapshot
    lines = [
        f"target identity: {snap.identity}",
        f"kind: {snap.kind}",
        f"base tree: {snap.base_tree}",
        f"candidate tree: {snap.candidate_tree}",
        f"changed paths ({len(snap.paths)}):",
        *(f"  {p}" for p in snap.paths),
    ]
    if patch is not None and patch:
        lines += ["patch (base tree -> candidate tree, untracked files included):"]
        lines += [patch.decode("utf-8", "replace")]
    else:
        lines += [
            f"the patch is large; inspect it with 'git diff {snap.base_tree} {snap.candidate_tree}'"
        ]
    return "\n".join(lines)


def lens_prompt(state: ReviewState, lens: str, patch: bytes | None) -> str:
    """The full prompt for ``lens`` of ``state``."""
    order, _ = state.binding(lens)
    binding = binding_text(
        state.lineage_id,
        state.generation,
        state.initial_snapshot.identity,
        lens,
        order,
        len(state.lenses),
    )
    return (
        binding
        + "\n\n"
        + f"You are the {lens} lens of a factory review (lens {order} of {len(state.lenses)}): "
        + f"an independent, read-only reviewer. Your concern: {LENS_CONCERN[lens]}.\n"
        + RULES
        + data_block("CANDIDATE", _candidate(state, patch))
    )
