"""``factory receipt apply R``: take the verified, approved change into any checkout
(issue 22, SPEC M-1).

In order, every refusal before the target is touched (exit 2, named):

1. the receipt verifies (revision, canonical bytes, every evidence file, consistency; the
   run's own worktree is not consulted — the change is taken from the evidence) and its
   run was approved (``completed``); a rehearsal receipt may be applied, and the result
   says it is a rehearsal's change;
2. the target (``--to``, default the current folder) is a checkout, not in the middle of
   an operation, holding no git lock, with no staged or unstaged change and no untracked
   file where the change puts one;
3. the target's HEAD tree is the receipt's base tree — or, with ``--3way``, the patch is
   merged onto the target's HEAD tree instead, and the result says it is no longer the
   judged tree;
4. the bound patch, applied with git in a private index, produces exactly the candidate
   tree (by object id: byte for byte, mode for mode) — with ``--3way`` it must apply
   without conflict;
5. ``--commit`` needs an identity git knows; ``--branch NAME`` a new, valid branch name.

Only then the tree is staged in the target (``read-tree -m -u HEAD TREE``), the staged
tree is checked again; with ``--branch`` the checkout moves to a new branch at its HEAD
(no file changes), and with ``--commit`` the tree is committed on HEAD (author: the user,
as git knows them; the message names the receipt's revision). Nothing is ever pushed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final, Literal

import trio
from pydantic import Field

from factory.agent.evidence import read_nofollow, resolve_evidence_path
from factory.agent.receipt import AgentReceipt, CandidateRecord
from factory.documents.canonical import sha256_hex
from factory.errors import FactoryError, Failure, Refused
from factory.gitio import apply as gitapply
from factory.gitio.apply import Checkout
from factory.models import StrictModel

APPLICATION_SCHEMA: Final = "factory.receipt-application/1"


class ApplyRefused(Refused):
    """The change was not applied; the target is untouched (exit 2)."""


class ApplyFailed(Failure):
    """Staging or committing failed after it began (exit 4)."""


_define = ApplyRefused.define
NOT_VERIFIED = _define(
    "apply-receipt-not-verified", "run factory receipt verify R: it names every failed check"
)
NOT_APPROVED = _define(
    "apply-receipt-not-approved", "only an approved run's change (status completed) is applied"
)
NO_CANDIDATE = _define("apply-no-candidate", "the receipt binds no change to apply")
NOT_A_CHECKOUT = _define(
    "apply-target-not-a-checkout", "pass --to the folder of a git checkout (not a bare repository)"
)
TARGET_BUSY = _define(
    "apply-target-busy", "finish or abort the operation (git status says how), or wait for git"
)
TARGET_DIRTY = _define(
    "apply-target-dirty", "commit or stash your changes (git status shows them), then retry"
)
BASE_MISMATCH = _define(
    "apply-base-mismatch",
    "check out the receipt's base commit (git switch --detach BASE), or pass --3way to merge "
    "the change onto your HEAD (the result is then not the judged tree)",
)
NOT_REPRODUCED = _define(
    "apply-patch-does-not-reproduce",
    "keep the receipt and its evidence as they are and report it: the bound patch does not "
    "make the judged tree",
)
CONFLICT = _define(
    "apply-conflict", "apply on the receipt's base commit instead, or merge the change by hand"
)
NO_IDENTITY = _define(
    "apply-no-identity", "set git config user.name and user.email, or leave out --commit"
)
BRANCH_INVALID = _define("apply-branch-invalid", "pass --branch a valid new branch name")
BRANCH_EXISTS = _define("apply-branch-exists", "pass --branch a name no branch has yet")
INDEX_MISMATCH = ApplyFailed.define(
    "apply-index-mismatch",
    "inspect the checkout (git status, git diff --cached): something changed it meanwhile",
)

REHEARSAL_NOTE: Final = (
    "this change comes from a REHEARSAL: a scripted loopback model produced it, so the "
    "run proved the control path and nothing about model judgement"
)


class ReceiptApplication(StrictModel):
    """``factory.receipt-application/1``: what ``factory receipt apply`` did.

    ``judged_tree``: the target now holds exactly the candidate tree the receipt judged
    (false only with ``three_way``, which merged the change onto another base);
    ``result``: ``staged`` or ``committed`` (``commit`` then names it); ``rehearsal``: the
    change came from a rehearsal run (a scripted model), said again in ``note``.
    """

    schema_id: Literal["factory.receipt-application/1"] = Field(
        default=APPLICATION_SCHEMA, alias="schema"
    )
    receipt: str
    revision: str
    candidate_identity: str
    target: str
    base_tree: str
    target_head: str
    tree: str
    candidate_tree: str
    judged_tree: bool
    three_way: bool
    result: Literal["staged", "committed"]
    commit: str | None
    branch: str | None
    rehearsal: bool
    note: str | None


@dataclass(frozen=True, slots=True)
class ApplyRequest:
    """``factory receipt apply``'s flags as values."""

    receipt: Path
    to: Path
    commit: bool = False
    branch: str | None = None
    three_way: bool = False


def _verified(path: Path) -> tuple[AgentReceipt, CandidateRecord, bytes]:
    """The approved receipt, its final candidate and the bound patch bytes."""
    from factory.agent.verify import failed_checks, load_receipt, verify

    report = verify(path, worktree=False)
    if not report.ok:
        raise NOT_VERIFIED("the receipt does not verify: " + "; ".join(failed_checks(report)))
    receipt, _ = load_receipt(path)
    if receipt.status != "completed" or receipt.verdict != "APPROVE":
        raise NOT_APPROVED(f"the run ended {receipt.status}, not approved")
    cand = receipt.final_candidate()
    if cand is None:
        raise NO_CANDIDATE("the receipt binds no candidate")
    try:
        patch = read_nofollow(resolve_evidence_path(cand.patch_evidence, path))
    except OSError as exc:
        raise NOT_VERIFIED("the patch evidence could not be read again") from exc
    if sha256_hex(patch) != cand.patch_evidence.sha256:  # changed since it was verified
        raise NOT_VERIFIED("the patch evidence changed while it was being applied")
    return receipt, cand, patch


def _busy(checkout: Checkout) -> str | None:
    from factory.gitio.state import common_lock_files, in_progress

    state = in_progress(checkout.git_dir)
    if state is not None:
        return state
    for name in ("index.lock", "HEAD.lock"):
        if os.path.lexists(checkout.git_dir / name):
            return f"a git lock file ({name})"
    locks = (
        common_lock_files(checkout.common_dir) if checkout.common_dir != checkout.git_dir else []
    )
    return f"a git lock file ({locks[0].label})" if locks else None


def _in_the_way(root: Path, rel: str) -> bool:
    """Whether something on disk (untracked, ignored) takes the place of a file the change
    adds: the path itself, or one of its folders as a non-folder."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        folder = root.joinpath(*parts[:i])
        if not os.path.lexists(folder):
            return False
        if not os.path.isdir(folder):
            return True
    return os.path.lexists(root / rel)


def _check_clean(checkout: Checkout, cand: CandidateRecord, env: Mapping[str, str]) -> None:
    if gitapply.has_changes(checkout, env):
        raise TARGET_DIRTY("the target has staged or unstaged changes")
    added = [f.path for f in cand.body.files if f.state == "added"]
    if any(_in_the_way(checkout.root, p) for p in added):
        raise TARGET_DIRTY("an untracked file in the target lies where the change puts one")


def _located(to: Path) -> Checkout:
    """Check 2's first part: a checkout, not busy, with a commit."""
    checkout = gitapply.locate_checkout(to)
    if checkout is None:
        raise NOT_A_CHECKOUT("--to is not the folder of a git checkout")
    busy = _busy(checkout)
    if busy is not None:
        raise TARGET_BUSY(f"the target is busy: {busy}")
    if checkout.head is None or checkout.head_tree is None:
        raise BASE_MISMATCH("the target has no commit yet")
    return checkout


def _clean(checkout: Checkout, cand: CandidateRecord) -> dict[str, str]:
    """Check 2's second part; returns the checkout's no-filter environment."""
    env = gitapply.no_filters(checkout)
    _check_clean(checkout, cand, env)
    return env


def _new_tree(checkout: Checkout, cand: CandidateRecord, patch: bytes, head_tree: str) -> str:
    """Check 4: the tree the patch makes of the target's HEAD tree."""
    on_base = head_tree == cand.body.base_tree
    tree = gitapply.patched_tree(checkout.root, head_tree, patch, three_way=not on_base)
    if tree is None and not on_base:
        raise CONFLICT("the change does not merge onto the target's HEAD without a conflict")
    if tree is None or (on_base and tree != cand.body.candidate_tree):
        raise NOT_REPRODUCED("the bound patch does not produce the receipt's candidate tree")
    return tree


def message(receipt: AgentReceipt, cand: CandidateRecord, judged: bool) -> str:
    """The commit message: it names the receipt's revision and says what the tree is."""
    lines = [
        f"Apply the change approved by factory receipt {(receipt.revision or '')[:19]}",
        "",
        f"factory-receipt-revision: {receipt.revision}",
        f"factory-candidate: {cand.identity}",
        f"factory-candidate-tree: {cand.body.candidate_tree}",
    ]
    if not judged:
        lines.append("factory-note: merged onto another base (--3way); not the judged tree")
    if receipt.route == "rehearsal":
        lines.append(f"factory-note: {REHEARSAL_NOTE}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class _Proven:
    """The target after checks 2–4: its checkout, no-filter environment, the tree the
    patch makes of its HEAD tree, and the patch bytes that made it."""

    checkout: Checkout
    env: dict[str, str]
    tree: str
    patch: bytes


async def _together(*works: Callable[[], object]) -> list[object]:
    """Run ``works`` in worker threads at once; each one's result or typed error, in order
    (the caller raises them in its own order)."""
    outcomes: list[object] = [None] * len(works)

    async def run(n: int, work: Callable[[], object]) -> None:
        try:
            outcomes[n] = await trio.to_thread.run_sync(work)
        except FactoryError as exc:
            outcomes[n] = exc

    async with trio.open_nursery() as nursery:
        for n, work in enumerate(works):
            nursery.start_soon(run, n, work)
    return outcomes


def _raise_first(outcomes: list[object]) -> None:
    for outcome in outcomes:
        if isinstance(outcome, FactoryError):
            raise outcome


async def _prove(request: ApplyRequest, cand: CandidateRecord) -> _Proven:
    """Checks 2–4 on the target; the target is not touched (a private index only). The
    clean check and the private proof run at once; refusals keep the documented order."""
    try:
        patch = read_nofollow(resolve_evidence_path(cand.patch_evidence, request.receipt))
    except OSError as exc:
        raise NOT_VERIFIED("the patch evidence could not be read") from exc
    checkout = await trio.to_thread.run_sync(_located, request.to)
    head_tree = checkout.head_tree
    assert head_tree is not None  # _located refused an unborn HEAD
    on_base = head_tree == cand.body.base_tree
    tree_work: Callable[[], object] = partial(_new_tree, checkout, cand, patch, head_tree)
    if not on_base and not request.three_way:
        tree_work = partial(_mismatch, "the target's HEAD tree is not the receipt's base tree")
    env, tree = await _together(partial(_clean, checkout, cand), tree_work)
    _raise_first([env, tree])
    assert isinstance(env, dict) and isinstance(tree, str)
    return _Proven(checkout, env, tree, patch)


def _mismatch(fact: str) -> str:
    raise BASE_MISMATCH(fact)


async def _checked(request: ApplyRequest) -> tuple[AgentReceipt, CandidateRecord, _Proven]:
    """Checks 1–4. The verification (Python's work) and the target's checks and private
    proof (git's) run at the same time; neither touches the target, and a refusal is
    raised in the documented order (the receipt's first). The proof is kept only for the
    very bytes that were verified."""
    from factory.agent.verify import load_receipt

    receipt, _ = load_receipt(request.receipt)
    cand = receipt.final_candidate()
    if cand is None:
        _verified(request.receipt)  # raises its own refusal first
        raise NO_CANDIDATE("the receipt binds no candidate")
    verified: object = None
    proven: object = None

    async def verify_it() -> None:
        nonlocal verified
        verified = (await _together(partial(_verified, request.receipt)))[0]

    async def prove_it() -> None:
        nonlocal proven
        try:
            proven = await _prove(request, cand)
        except FactoryError as exc:
            proven = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(verify_it)
        nursery.start_soon(prove_it)
    _raise_first([verified, proven])
    assert isinstance(verified, tuple) and isinstance(proven, _Proven)
    receipt, checked, patch = verified
    if checked != cand or patch != proven.patch:
        raise NOT_VERIFIED("the receipt or its patch changed while it was being applied")
    return receipt, checked, proven


def apply_receipt(request: ApplyRequest, environ: Mapping[str, str]) -> ReceiptApplication:
    """Apply the receipt's change to the target (see the module docstring).

    Raises:
        UsageError / ReceiptInvalid: the receipt is missing (2) or not one (4).
        ApplyRefused: a named refusal; the target is untouched (2).
        ApplyFailed / GitFailure: staging or committing failed after it began (4).
    """
    receipt, cand, proven = trio.run(_checked, request)
    checkout, env, tree = proven.checkout, proven.env, proven.tree
    head = checkout.head
    assert head is not None  # _target refused an unborn HEAD
    if request.commit and not gitapply.has_identity(checkout.root, environ):
        raise NO_IDENTITY("git does not know who the author is")
    if request.branch is not None:
        if not gitapply.branch_name_valid(checkout.root, request.branch):
            raise BRANCH_INVALID("--branch is not a valid branch name")
        if gitapply.rev(checkout.root, f"refs/heads/{request.branch}") is not None:
            raise BRANCH_EXISTS("--branch names a branch that exists")
    gitapply.stage(checkout, tree, env)
    if gitapply.index_tree(checkout) != tree:
        raise INDEX_MISMATCH("the staged tree is not the tree that was proven")
    if request.branch is not None:  # at HEAD, whose tree the index was staged against
        gitapply.new_branch(checkout.root, request.branch, head)
    judged = tree == cand.body.candidate_tree
    commit = None
    if request.commit:
        commit = gitapply.commit(checkout.root, tree, head, message(receipt, cand, judged), environ)
        gitapply.move_head(checkout.root, commit, head, "factory receipt apply --commit")
    rehearsal = receipt.route == "rehearsal"
    return ReceiptApplication(
        receipt=os.fspath(request.receipt),
        revision=receipt.revision or "",
        candidate_identity=cand.identity,
        target=os.fspath(checkout.root),
        base_tree=cand.body.base_tree,
        target_head=head,
        tree=tree,
        candidate_tree=cand.body.candidate_tree,
        judged_tree=judged,
        three_way=request.three_way,
        result="committed" if commit else "staged",
        commit=commit,
        branch=request.branch,
        rehearsal=rehearsal,
        note=REHEARSAL_NOTE if rehearsal else None,
    )
