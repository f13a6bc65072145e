"""``factory worktree remove OUT``: remove the linked worktree a run created (issue 16).

factory never removes a worktree on its own. On request, it removes the one a receipt
says it created (``worktree_creation``), and only when nothing the user might want is
lost: the worktree is *clean* (HEAD still the pinned base on the recorded branch, empty
status), holds *exactly the receipt's candidate* (the identity re-derived from it equals
the one the final verdict judged), or *commits it* (HEAD, still on the recorded branch —
which is kept, so the commit is not lost — is a commit whose tree is the candidate tree
and whose first parent is the base, and the worktree holds exactly that commit).
Everything else is refused with exit 2 and nothing is touched. Ignored files go with the
folder, as with ``git worktree remove``; the branch is kept; no other worktree
registration is read for writing, pruned, repaired or unlocked.

The receipt must be terminal (or ``running`` but abandoned: the factory process that wrote
it is gone) and unaltered (canonical bytes, revision); that guards
against accidents, not against a same-user actor who can recompute a revision.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from factory.agent.admission import hold_worktree
from factory.agent.identity import candidate_body
from factory.agent.receipt import AgentReceipt, WorktreeCreation, receipt_bytes
from factory.agent.verify import liveness, load_receipt
from factory.errors import FactoryError, Refused
from factory.gitio.candidate import derive
from factory.gitio.create import NO_HOOKS
from factory.gitio.gitdata import status_bytes
from factory.gitio.run import run_git
from factory.gitio.worktree import (
    Worktree,
    head_commit,
    head_ref,
    hidden_entries,
    locate,
)
from factory.models import StrictModel

REMOVAL_SCHEMA: Final = "factory.worktree-removal/1"


class RemoveRefused(Refused):
    """The worktree is not removed; nothing was touched (exit 2)."""


_define = RemoveRefused.define
_YOURSELF = "remove it yourself (git worktree remove) if you are sure"
RECEIPT_NOT_VERIFIED = _define("worktree-receipt-not-verified", "run factory receipt verify on it")
RECEIPT_NOT_TERMINAL = _define("receipt-not-terminal", _YOURSELF)
NOT_CREATED_BY_FACTORY = _define("worktree-not-created-by-factory", _YOURSELF)
WORKTREE_GONE = _define("created-worktree-gone", "nothing to remove")
NOT_FROM_RECEIPT = _define("worktree-not-from-receipt", "leave it, or " + _YOURSELF)
WORKTREE_LOCKED = _define(
    "worktree-locked", "unlock it yourself (git worktree unlock) first: factory never does"
)
WORKTREE_MOVED = _define("worktree-moved", "keep the new commits (push or branch), or " + _YOURSELF)
WORKTREE_NOT_PLAIN = _define("worktree-not-plain", _YOURSELF)
WORKTREE_DIRTY = _define(
    "worktree-dirty",
    "keep the changes (commit or copy them), or remove it yourself (git worktree remove --force)",
)


class WorktreeRemoval(StrictModel):
    """``factory.worktree-removal/1``: what was removed and why it was safe to.

    ``state``: ``clean`` (the base, unchanged), ``candidate`` (exactly the receipt's
    judged candidate, ``identity``, uncommitted) or ``committed`` (HEAD, on the run's
    branch, commits exactly that candidate on the base: ``committed_as``);
    ``branch_kept``: the branch left in place (``None`` for a detached HEAD).
    """

    schema_id: Literal["factory.worktree-removal/1"] = Field(default=REMOVAL_SCHEMA, alias="schema")
    receipt: str
    worktree: str
    state: State
    identity: str | None
    branch_kept: str | None
    committed_as: str | None = None
    """With ``committed``: the commit (on ``branch_kept``) that holds the candidate now."""


def _created(receipt: AgentReceipt, data: bytes) -> WorktreeCreation:
    if receipt.revision != receipt.compute_revision() or data != receipt_bytes(receipt):
        raise RECEIPT_NOT_VERIFIED("the receipt's revision or bytes do not verify")
    if receipt.status == "running" and liveness(receipt) != "abandoned":
        # An abandoned run (its factory process is gone) never finishes: its worktree may
        # go when clean (it has no judged candidate to hold).
        raise RECEIPT_NOT_TERMINAL("the receipt's run has not finished, or cannot be told apart")
    if receipt.worktree_creation is None:
        raise NOT_CREATED_BY_FACTORY("the receipt's worktree was supplied by the caller")
    return receipt.worktree_creation


def _locate(creation: WorktreeCreation) -> Worktree:
    path = Path(creation.path)
    if not os.path.lexists(path):
        raise WORKTREE_GONE("the receipt's worktree no longer exists")
    wt = locate(path)
    if os.fspath(wt.root) != creation.path or os.fspath(wt.common_dir) != creation.repository:
        raise NOT_FROM_RECEIPT("the folder is no longer the worktree the receipt's run created")
    if os.path.lexists(wt.git_dir / "locked"):
        raise WORKTREE_LOCKED("the worktree is locked (git worktree lock)")
    return wt


def _submodule_initialised(wt: Worktree) -> bool:
    out = run_git(wt.root, ["ls-files", "-s", "-z"], what="git ls-files -s")
    for rec in out.split(b"\0"):
        if rec.startswith(b"160000 "):
            path = rec.partition(b"\t")[2]
            if os.path.lexists(os.path.join(os.fsencode(wt.root), path, b".git")):
                return True
    return False


State = Literal["clean", "candidate", "committed"]


def _committed(receipt: AgentReceipt, wt: Worktree, head: str | None) -> str:
    """HEAD (on the run's branch, which stays) commits exactly the judged candidate on the
    base, and the worktree holds exactly that commit: the change lives on in it."""
    from factory.agent.representation import represent

    cand = receipt.final_candidate()
    moved = WORKTREE_MOVED(
        "the worktree's HEAD moved off the base, and not to a commit of the judged candidate"
    )
    if cand is None or head is None:
        raise moved
    try:
        derived = derive(wt, cand.body.base_commit, cand.body.base_tree)
    except FactoryError:
        raise moved from None
    rep = represent(receipt, derived.candidate_tree, None)
    if rep.state == "committed-then-changed" and rep.head == rep.committed_as:
        raise WORKTREE_DIRTY("the worktree holds changes on top of the candidate's commit")
    if rep.state != "committed" or rep.committed_as != head:
        raise moved
    if status_bytes(wt.root):
        raise WORKTREE_DIRTY("the worktree's index or files differ from the candidate's commit")
    return head


def _state(receipt: AgentReceipt, wt: Worktree) -> tuple[State, str | None, str | None]:
    """The state, the candidate identity (``candidate``, ``committed``) and the commit that
    holds it (``committed``)."""
    creation = receipt.worktree_creation
    assert creation is not None
    ref = f"refs/heads/{creation.branch}" if creation.branch is not None else None
    head = head_commit(wt)
    if head_ref(wt) != ref:
        raise WORKTREE_MOVED("the worktree's HEAD moved off the branch the run created it on")
    if head != creation.base_commit and ref is None:
        # A detached HEAD's commits would live on in no branch once the worktree is gone.
        raise WORKTREE_MOVED(
            "the worktree's detached HEAD moved off the base: its commits are on no branch"
        )
    if hidden_entries(wt) or _submodule_initialised(wt):
        raise WORKTREE_NOT_PLAIN(
            "the worktree hides changes (assume-unchanged/skip-worktree) or holds an "
            "initialised submodule"
        )
    if head != creation.base_commit:
        commit = _committed(receipt, wt, head)
        cand = receipt.final_candidate()
        return "committed", cand.identity if cand else None, commit
    if not status_bytes(wt.root):
        return "clean", None, None
    cand = receipt.final_candidate()
    if cand is not None:
        try:
            derived = derive(wt, cand.body.base_commit, cand.body.base_tree)
            if candidate_body(derived).identity() == cand.identity:
                return "candidate", cand.identity, None
        except FactoryError:
            pass
    raise WORKTREE_DIRTY("the worktree holds changes other than the receipt's candidate")


def remove_created_worktree(receipt_path: Path) -> WorktreeRemoval:
    """Remove the worktree the receipt at ``receipt_path`` created, when safe.

    Raises:
        UsageError: the receipt does not exist (exit 2).
        ReceiptUnreadable: not a receipt (exit 4).
        RemoveRefused / WorktreeRefused / AdmissionRefused (``worktree-busy``): refused,
            nothing touched (exit 2).
        GitFailure: ``git worktree remove`` failed (exit 4).
    """
    receipt, data = load_receipt(receipt_path)
    creation = _created(receipt, data)
    wt = _locate(creation)
    with hold_worktree(wt):
        state, identity, commit = _state(receipt, wt)
        run_git(
            wt.common_dir,
            [*NO_HOOKS, "worktree", "remove", "--force", "--", os.fspath(wt.root)],
            what="git worktree remove",
        )
    return WorktreeRemoval(
        receipt=os.fspath(receipt_path),
        worktree=creation.path,
        state=state,
        identity=identity,
        branch_kept=creation.branch,
        committed_as=commit,
    )
