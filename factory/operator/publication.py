"""The publish intent derived from what the caller observed (SPEC O-2, O-3, X-1): the
receipt-side refusals, the injected preconditions (:func:`require_accepted_gate`, which the
CLI always adds), and the commit and pull-request plan. Pure: the caller reads the receipt,
the live worktree, the remote and the gate; nothing here reads the clock, the disk or the
network. The intent models themselves are :mod:`factory.operator.intent`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factory.operator.gateref import GateFinding
from factory.operator.intent import (
    CANDIDATE_CHANGED,
    CANDIDATE_CONVERSIONS_DIFFER,
    CANDIDATE_MISSING,
    GATE_NOT_ACCEPTED,
    OPERATIONS,
    RECEIPT_NOT_COMPLETED,
    RECEIPT_NOT_VERIFIED,
    REHEARSAL_RECEIPT,
    CandidateRef,
    CommitPlan,
    PublishIntent,
    PullRequestPlan,
    ReceiptRef,
    RemoteRef,
    close_revision,
)

if TYPE_CHECKING:
    from factory.agent.receipt import AgentReceipt, CandidateRecord


@dataclass(frozen=True, slots=True)
class PublishInputs:
    """Everything the publish intent is derived from, observed by the caller.

    ``receipt`` is the parsed agent receipt. ``verified`` is the outcome of
    ``factory receipt verify``; ``live_identity`` the identity re-derived from the live
    worktree now (``None`` when it could not be derived).
    """

    receipt: AgentReceipt
    receipt_path: str
    receipt_sha256: str
    verified: bool
    live_identity: str | None
    forge: str
    repository: str
    issue: int | None
    remote: RemoteRef
    base_branch: str
    author_name: str
    author_email: str
    gate: GateFinding | None = None


#: A precondition the caller injects (the pipeline adds ``gate-not-accepted``): raise
#: :class:`IntentRefused` to refuse.
Precondition = Callable[[PublishInputs], None]


def check_receipt(inputs: PublishInputs) -> CandidateRecord:
    """The receipt-side refusals of :func:`publish_intent`; returns the final candidate."""
    receipt = inputs.receipt
    if receipt.route == "rehearsal":
        raise REHEARSAL_RECEIPT(
            "the receipt comes from a rehearsal (scripted model); a rehearsal is never "
            "published — run the agent on the subscription route",
        )
    if receipt.status != "completed" or receipt.verdict != "APPROVE":
        raise RECEIPT_NOT_COMPLETED(
            "the agent receipt is not 'completed' with a final APPROVE; only an approved "
            "candidate can be published",
        )
    if not inputs.verified:
        raise RECEIPT_NOT_VERIFIED(
            "the agent receipt does not verify (run 'factory receipt verify' to see why)",
        )
    candidate = receipt.final_candidate()
    if candidate is None or receipt.base is None:
        raise CANDIDATE_MISSING("the agent receipt binds no candidate")
    if candidate.conversions_differ:
        raise CANDIDATE_CONVERSIONS_DIFFER(
            "the receipt says the repository's conversions (filters, eol, attributes) make "
            "the checked-out bytes differ from the committed ones; publish refused",
        )
    if inputs.live_identity != candidate.identity:
        raise CANDIDATE_CHANGED(
            "the worktree no longer re-derives the receipt's candidate (it changed after "
            "the run); run the agent again",
        )
    return candidate


def require_accepted_gate(inputs: PublishInputs) -> None:
    """The precondition of every CLI publication: an accepted, complete gate run for this
    exact candidate tree (no flag skips it).

    Raises:
        IntentRefused: ``gate-not-accepted``.
    """
    finding = inputs.gate
    if finding is None:
        raise GATE_NOT_ACCEPTED("no decision gate run was looked up for this candidate")
    ref = finding.ref
    if ref is None:
        raise GATE_NOT_ACCEPTED(finding.problem or "no accepted gate run for this candidate")
    candidate = inputs.receipt.final_candidate()
    tree = None if candidate is None else candidate.body.candidate_tree
    if ref.candidate_tree != tree:
        raise GATE_NOT_ACCEPTED(
            f"gate run {ref.run} was accepted for another candidate tree than the receipt's"
        )
    if not ref.completed:
        raise GATE_NOT_ACCEPTED(f"gate run {ref.run} has not completed its scenario")


def _messages(inputs: PublishInputs, identity: str) -> tuple[str, str, str]:
    receipt = inputs.receipt
    title = (
        f"Resolve #{inputs.issue}"
        if inputs.issue is not None
        else f"factory candidate {identity[7:19]}"
    )
    gate = inputs.gate.ref if inputs.gate is not None else None
    gate_line = (
        f"Decision gate: run {gate.run} ({gate.scenario}) accepted at {gate.head}\n"
        if gate is not None
        else ""
    )
    facts = (
        f"Agent receipt revision: {receipt.revision}\n"
        f"Candidate identity: {identity}\n"
        f"{gate_line}"
        "Opened by 'factory operator publish' under a single-use operator grant; "
        "whether it lands is decided separately."
    )
    closes = f"\n\nCloses #{inputs.issue}" if inputs.issue is not None else ""
    return title, f"{title}\n\n{facts}\n", f"{facts}{closes}\n"


def commit_date(receipt: AgentReceipt) -> str:
    """The commit's author/committer date: the receipt's end time, in git's raw form."""
    import datetime as _dt

    ended = receipt.timings.ended_at or receipt.timings.started_at
    moment = _dt.datetime.fromisoformat(ended.replace("Z", "+00:00"))
    return f"@{int(moment.timestamp())} +0000"


def publish_intent(
    inputs: PublishInputs, preconditions: Sequence[Precondition] = ()
) -> PublishIntent:
    """The publish intent (pure). Preconditions run after the receipt checks.

    Raises:
        IntentRefused: ``rehearsal-receipt``, ``receipt-not-completed``,
            ``receipt-not-verified``, ``candidate-missing``, ``candidate-conversions-differ``,
            ``candidate-changed``, or a precondition's own code.
    """
    candidate = check_receipt(inputs)
    revision = inputs.receipt.revision
    if revision is None:  # a verified terminal receipt always has one
        raise RECEIPT_NOT_VERIFIED("the agent receipt has no revision")
    for check in preconditions:
        check(inputs)
    body = candidate.body
    title, message, pr_body = _messages(inputs, candidate.identity)
    draft = PublishIntent(
        state="AWAITING_AUTHORITY",
        action="PUBLISH_CANDIDATE",
        required_authority="PUBLISH_CANDIDATE",
        effect="NONE",
        operations=list(OPERATIONS),
        forge=inputs.forge,
        repository=inputs.repository,
        issue=inputs.issue,
        receipt=ReceiptRef(
            path=inputs.receipt_path,
            sha256=inputs.receipt_sha256,
            revision=revision,
            task=inputs.receipt.task,
        ),
        candidate=CandidateRef(
            identity=candidate.identity,
            base_commit=body.base_commit,
            base_tree=body.base_tree,
            candidate_tree=body.candidate_tree,
            files=len(body.files),
        ),
        remote=inputs.remote,
        commit=CommitPlan(
            author_name=inputs.author_name,
            author_email=inputs.author_email,
            date=commit_date(inputs.receipt),
            message=message,
        ),
        pull_request=PullRequestPlan(base=inputs.base_branch, title=title, body=pr_body),
        gate=inputs.gate.ref if inputs.gate is not None else None,
        intent_revision="",
    )
    return close_revision(draft)
