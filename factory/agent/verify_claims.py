"""Claims of a receipt checked against the evidence it binds (issue 24 §5).

A receipt whose revision is recomputed after an edit is self-consistent by construction;
what such an edit cannot also rewrite is the hash-bound evidence. So beside the receipt's
internal consistency (:func:`factory.agent.verify.consistency_problems`) the verifier
reads what the receipt claims from the evidence too:

* each review phase's ``verdict`` must be the verdict in that phase's hash-bound verdict
  file (``<phase>-verdict``): relabelling a REQUEST_CHANGES as APPROVE, with status, exit
  code and revision recomputed to match, is caught here;
* every candidate's base commit and tree must be the receipt's ``base``.

Only evidence whose hash already checked is read (a file that does not hash is reported
by that check), through the same no-follow reader as every evidence read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from factory.agent.evidence import read_nofollow, resolve_evidence_path
from factory.agent.receipt import AgentReceipt, EvidenceRef
from factory.agent.verification import EvidenceCheck

_VERDICT_FILE_LIMIT = 1 << 20


def claim_problems(receipt: AgentReceipt, path: Path, checks: Sequence[EvidenceCheck]) -> list[str]:
    """The receipt's claims that its own evidence contradicts (stable problem names)."""
    hashed = {(c.role, c.path) for c in checks if c.ok}
    problems = []
    for phase in receipt.phases:
        if phase.verdict is None:
            continue
        files = [r for r in phase.evidence if r.role.endswith("-verdict")]
        for ref in files:
            if (ref.role, ref.path) in hashed and _verdict_in(ref, path) != phase.verdict:
                problems.append(f"{phase.phase}-verdict-does-not-match-its-verdict-file")
    base = receipt.base
    for name, cand in (
        ("initial", receipt.candidate.initial),
        ("repaired", receipt.candidate.repaired),
    ):
        if cand is None or base is None:
            continue
        if (cand.body.base_commit, cand.body.base_tree) != (base.commit, base.tree):
            problems.append(f"{name}-candidate-base-is-not-the-base")
    return problems


def _verdict_in(ref: EvidenceRef, receipt_path: Path) -> str | None:
    """The ``verdict`` a verdict file holds, or None when it holds no readable one."""
    try:
        data = read_nofollow(resolve_evidence_path(ref, receipt_path), limit=_VERDICT_FILE_LIMIT)
        value = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    verdict = value.get("verdict") if isinstance(value, dict) else None
    return verdict if isinstance(verdict, str) else None
