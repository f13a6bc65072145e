"""Re-check a receipt without trusting it (SPEC A-8: ``factory receipt verify``).

1. The file parses as ``factory.agent-receipt/1`` and its bytes are exactly the canonical
   form the run wrote (canonical JSON + LF).
2. ``revision`` equals the digest of the canonical body recomputed here, and the body does
   not contradict itself (status vs exit code, verdict vs the last review, one repair).
3. Every evidence file (phase outputs, candidate status bytes and patches) exists as a
   regular file, is named ``<role>-<sha256>``, and has the bound size and SHA-256.
4. Each candidate's ``identity`` is the digest of its own body, and every review judged a
   bound candidate.
5. When the repository still exists, each candidate's stored patch applied to its base
   tree reproduces the candidate tree and every bound file (mode and SHA-256)
   (:func:`factory.agent.verify_git.check_patches`).
6. When the worktree still exists, the candidate the authoritative verdict judged is
   re-derived from it and compared by identity ("still matches" or not), and its
   representation is recognised (:mod:`factory.agent.representation`): still uncommitted
   in the worktree, committed as a commit on the base, committed then changed, or a
   mismatch. Only a mismatch fails, and only a receipt that claims the worktree holds it
   (``completed``, ``rejected``) — a truthful ``failed`` or ``interrupted`` receipt
   verifies as what it is.
7. A ``running`` receipt is not verified; ``liveness`` says whether the factory process
   that wrote it still runs or the run was ``abandoned`` (that process is gone).

The result is a JSON value (schema ``factory.receipt-verification/1``); ``ok`` is true only
when all of the above hold (a worktree that is gone is reported, not failed).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.agent.evidence import read_nofollow, resolve_evidence_path
from factory.agent.receipt import AgentReceipt, EvidenceRef, receipt_bytes
from factory.agent.representation import Representation, represent
from factory.agent.verification import (
    CandidateCheck,
    EvidenceCheck,
    Liveness,
    ReceiptVerification,
    RevisionCheck,
)
from factory.agent.verify_git import check_patches, live_candidate
from factory.errors import IntegrityFailure, UsageError
from factory.filehash import digest_file
from factory.models import parse_model

RECEIPT_LIMIT = 64 << 20  # bytes; a receipt larger than this is not one we wrote


class ReceiptInvalid(IntegrityFailure):
    """The file is not a valid ``factory.agent-receipt/1`` document (exit 4)."""


RECEIPT_INVALID = ReceiptInvalid.define(
    "receipt-invalid", "pass a receipt written by factory agent, unedited", default=True
)
RECEIPT_MISSING = UsageError.define("receipt-missing", "pass the --out path of a run")


@dataclass(frozen=True, slots=True)
class LoadedReceipt:
    """A receipt read once: its path, the exact bytes read and the model parsed from them.
    A command passes this value on instead of reading the file again (issue 25)."""

    path: Path
    receipt: AgentReceipt
    data: bytes


def parse_receipt(data: bytes) -> AgentReceipt:
    """The receipt model of bytes already read.

    Raises:
        ReceiptInvalid: not JSON, or not the schema (exit 4).
    """
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise RECEIPT_INVALID("the receipt is not JSON") from exc
    except RecursionError:
        raise RECEIPT_INVALID("the receipt is nested too deeply to be a receipt") from None
    return parse_model(AgentReceipt, value, code=RECEIPT_INVALID, what="the receipt")


def read_receipt(path: Path) -> LoadedReceipt:
    """Read and parse a receipt once (see :func:`load_receipt` for the refusals)."""
    if not os.path.lexists(path):
        raise RECEIPT_MISSING("the receipt does not exist")
    try:
        data = read_nofollow(path, limit=RECEIPT_LIMIT)
    except OSError as exc:
        raise RECEIPT_INVALID("the receipt is not a readable regular file") from exc
    return LoadedReceipt(path, parse_receipt(data), data)


def load_receipt(path: Path) -> tuple[AgentReceipt, bytes]:
    """Read and parse a receipt; return the model and the exact file bytes.

    Raises:
        UsageError: the path does not exist (exit 2).
        ReceiptInvalid: not a regular file, not JSON, or not the schema (exit 4).
    """
    loaded = read_receipt(path)
    return loaded.receipt, loaded.data


def all_evidence(receipt: AgentReceipt) -> list[EvidenceRef]:
    """Every evidence reference in a receipt: phases, candidates, then the route's log."""
    refs = [ref for phase in receipt.phases for ref in phase.evidence]
    for cand in (receipt.candidate.initial, receipt.candidate.repaired):
        if cand is not None:
            refs += [cand.status_evidence, cand.patch_evidence]
    if receipt.route_evidence is not None:
        refs.append(receipt.route_evidence)
    return refs


def check_evidence(ref: EvidenceRef, receipt_path: Path) -> EvidenceCheck:
    """Re-hash one evidence file; ``problem`` names what is wrong (or ``None``)."""
    path = resolve_evidence_path(ref, receipt_path)
    problem: str | None = None
    if path.name != f"{ref.role}-{ref.sha256}":
        problem = "name-mismatch"
    else:
        problem = _size_problem(path, ref.bytes)  # before hashing: a wrong size is enough
        if problem is None:
            try:
                size, sha = digest_file(path)
            except FileNotFoundError:
                problem = "missing"
            except OSError:
                problem = "unreadable"
            else:
                if size != ref.bytes:
                    problem = "size-mismatch"
                elif sha != ref.sha256:
                    problem = "digest-mismatch"
    return EvidenceCheck(role=ref.role, path=ref.path, ok=problem is None, problem=problem)


def _size_problem(path: Path, size: int) -> str | None:
    """``size-mismatch`` (or ``missing``) from one ``lstat``, so a file of the wrong size,
    however large, is reported without being read; None when its size is right (or it is
    not a regular file: the hashing read names that)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) and st.st_size != size:
        return "size-mismatch"
    return None


_EXIT_FOR_STATUS: dict[str, set[int | None]] = {
    "completed": {0},
    "rejected": {3},
    "failed": {1, 4},
    "interrupted": {130},
    "running": {None},
}
_VERDICT_FOR_STATUS = {"completed": "APPROVE", "rejected": "REQUEST_CHANGES"}


def consistency_problems(receipt: AgentReceipt) -> list[str]:
    """Contradictions inside a receipt that a recomputed revision would not reveal."""
    problems = []
    if receipt.exit_code not in _EXIT_FOR_STATUS[receipt.status]:
        problems.append("exit-code-does-not-match-status")
    wanted = _VERDICT_FOR_STATUS.get(receipt.status)
    if wanted is not None and receipt.verdict != wanted:
        problems.append("verdict-does-not-match-status")
    if receipt.status in ("completed", "rejected") and receipt.error is not None:
        problems.append("error-on-a-verdict-outcome")
    if receipt.status in ("failed", "interrupted") and receipt.error is None:
        problems.append("failure-without-error")
    reviews = [p for p in receipt.phases if p.phase in ("initial_review", "final_review")]
    if receipt.status in ("completed", "rejected") and (
        not reviews or reviews[-1].verdict != receipt.verdict
    ):
        problems.append("verdict-not-from-the-last-review")
    if sum(p.phase == "repair" for p in receipt.phases) > 1:
        problems.append("more-than-one-repair")
    candidates = [c for c in (receipt.candidate.initial, receipt.candidate.repaired) if c]
    if any(c.identity != c.body.identity() for c in candidates):
        problems.append("candidate-identity-does-not-match-body")
    known = {c.identity for c in candidates}
    if any(p.reviewed_identity not in known for p in reviews if p.reviewed_identity):
        problems.append("review-of-an-unbound-candidate")
    return problems + creation_problems(receipt)


def creation_problems(receipt: AgentReceipt) -> list[str]:
    """The creation record (``factory agent --repo``) agrees with the rest of the receipt."""
    creation, base = receipt.worktree_creation, receipt.base
    if creation is None:
        if base is not None and base.isolation != "caller-supplied-linked-git-worktree":
            return ["created-worktree-without-creation-record"]
        return []
    problems = []
    if creation.path != receipt.worktree:
        problems.append("creation-path-is-not-the-worktree")
    if base is not None and (
        base.isolation != "factory-created-linked-git-worktree"
        or base.commit != creation.base_commit
    ):
        problems.append("creation-does-not-match-base")
    return problems


def liveness(receipt: AgentReceipt) -> Liveness | None:
    """For a ``running`` receipt: ``running`` while the factory process that wrote it is
    alive, ``abandoned`` once it is gone (killed before its terminal record), ``unknown``
    when the receipt names no process or this system cannot tell. None when terminal."""
    if receipt.status != "running":
        return None
    proc = receipt.factory_process
    if proc is None:
        return "unknown"
    from factory.proc.procfs import alive

    state = alive(proc.pid, proc.start_ticks, proc.boot_id)
    return "unknown" if state is None else ("running" if state else "abandoned")


def verify(path: Path, *, worktree: bool = True) -> ReceiptVerification:
    """Verify the receipt at ``path`` (see the module docstring for the checks).

    ``worktree=False`` leaves out the checks that read the run's repository and worktree
    (steps 5 and 6: the patch replay and the live candidate) for a caller that proves the
    patch itself (``factory receipt apply``); the report says ``not-asked``."""
    return verify_loaded(read_receipt(path), worktree=worktree)


def verify_loaded(loaded: LoadedReceipt, *, worktree: bool = True) -> ReceiptVerification:
    """:func:`verify` of a receipt already read (the bytes read are the bytes judged)."""
    path, receipt, data = loaded.path, loaded.receipt, loaded.data
    computed = receipt.compute_revision()
    revision_ok = receipt.revision == computed
    exact = data == receipt_bytes(receipt)
    evidence = [check_evidence(ref, path) for ref in all_evidence(receipt)]
    patches = check_patches(receipt, path) if worktree else []
    representation: Representation | None = None
    if worktree:
        live = live_candidate(receipt, path)
        candidate = live.check
        # A commit of the candidate is the same candidate: only a worktree that holds
        # neither it nor such a commit is a mismatch (issue 22).
        representation = represent(receipt, live.tree, live.problem)
    else:
        cand = receipt.final_candidate()
        candidate = CandidateCheck(
            checked=False,
            identity=cand.identity if cand else None,
            gating=False,
            reason="not-asked",
        )
    terminal = receipt.status != "running"
    from factory.agent.verify_claims import claim_problems

    problems = consistency_problems(receipt) + claim_problems(receipt, path, evidence)
    ok = (
        revision_ok
        and exact
        and terminal
        and not problems
        and all(e.ok for e in evidence)
        and all(p.ok is not False for p in patches)
        and not (
            candidate.gating and representation is not None and representation.state == "mismatch"
        )
    )
    return ReceiptVerification(
        receipt=os.fspath(path),
        status=receipt.status,
        exit_code=receipt.exit_code,
        # A verified rehearsal is still a rehearsal: say so beside "ok" (proves the control
        # path only), so it is never read as a model's judgement.
        route=receipt.route,
        execution=receipt.execution,
        terminal=terminal,
        # A reservation whose factory is gone will never be finished: say so, rather than
        # let it read as a run in progress.
        liveness=liveness(receipt),
        revision=RevisionCheck(ok=revision_ok, stored=receipt.revision, computed=computed),
        canonical_bytes=exact,
        consistency_problems=problems,
        evidence=evidence,
        patches=patches,
        candidate=candidate,
        ok=ok,
        representation=representation,
    )


def verify_json(path: Path) -> dict[str, Any]:
    """The JSON value of :func:`verify`'s document, for readers that take it as data."""
    return verify(path).to_json_value()


def failed_checks(report: ReceiptVerification | Mapping[str, Any]) -> list[str]:
    """Which checks of ``report`` (the model or its JSON value) failed
    (:meth:`ReceiptVerification.failed_checks`)."""
    if not isinstance(report, ReceiptVerification):
        report = parse_model(ReceiptVerification, dict(report), what="the verification")
    return report.failed_checks()
