"""pre-push: HEAD's first-parent range, what the hook pushes, and first publication to a
remote with no refs (SPEC R; seeds, "Primera publicación a un remote vacío").

The candidate is ``HEAD^{tree}``, the base its first parent's tree (the empty tree for a
root commit). A HEAD whose tree equals its parent's — an empty commit replaying an approved
tree — is refused (``delivery-derivation/empty-commit``). A current-changes receipt needs
exactly one delivery commit: HEAD's parent tree is its base. A base-diff receipt may be
delivered by a first-parent range: the walk from HEAD finds the commit whose tree is the
base, and every commit of the range may change only genesis paths.

What the hook knows narrows this further:

* ``--pushed-commit SHA`` (the plain hook passes each local object it pushes; the pre-commit
  framework sets ``PRE_COMMIT_TO_REF``): every pushed commit must be HEAD
  (``delivery-derivation/not-head``): the gate judged HEAD, not another branch;
* ``--remote NAME`` (the hook's first argument): commits HEAD has that no remote-tracking
  ref of NAME has must all belong to the delivery range (``delivery-derivation/partial``);
  and when ``git ls-remote NAME`` lists no ref at all, the push is a first publication — it
  sends the whole history, so every path any commit touched must be a genesis path and every
  blob of the history must be a blob of the approved tree (an overwritten secret in an old
  commit fails closed). Commit and tag messages are outside the contract on purpose.
"""

from __future__ import annotations

from factory.display import inert
from factory.gitio.run import try_git
from factory.gitio.worktree import Worktree
from factory.review import nextcmd
from factory.review.bases import ancestor_with_tree, start_command
from factory.review.gates import gitfacts
from factory.review.gates.boundary import REMOTE_SAFETY, remote_problem
from factory.review.gates.decide import BaseCheck
from factory.review.gates.facts import LineageFacts
from factory.review.gates.live import (
    Derived,
    GateRequest,
    _no_head,
    head_live,
    lazy_comparer,
    unavailable,
)
from factory.review.gates.verdict import Verdict, deny


def _pushed_problem(wt: Worktree, req: GateRequest, head: str) -> Verdict | None:
    for given in req.pushed:
        commit = gitfacts.commit_of(wt.root, given)
        if commit != head:
            return deny(
                "delivery-derivation/not-head",
                f"the push sends {inert(given)[:40]}, which is not HEAD: the gate judges HEAD's "
                "delivery only",
                "check out the commit you push, then " + nextcmd.validate("pre-push"),
            )
    return None


def derive_pre_push(wt: Worktree, req: GateRequest) -> Derived:
    chain = gitfacts.first_parent_chain(wt.root, 2)
    if not chain:
        return Derived(_no_head("pre-push"), lambda s: None)
    head = chain[0]
    parent = gitfacts.parent_tree(wt.root, chain, 0)
    problem = _pushed_problem(wt, req, head.commit)
    if problem is None and head.tree == parent:
        problem = deny(
            "delivery-derivation/empty-commit",
            f"HEAD {head.commit[:12]} changes nothing (its tree is its parent's): an empty commit "
            "cannot deliver a review",
            "git reset --soft HEAD~1",
            nextcmd.validate("pre-push"),
        )
    live = head_live(wt, "pre-push", chain, problem)
    return Derived(live, _check(wt, req, head.commit, parent), same=lazy_comparer(wt))


def _range(wt: Worktree, s: LineageFacts, head: str, parent: str) -> tuple[str, ...] | Verdict:
    """The delivery commits of ``s`` (HEAD first), or the denial."""
    base = s.initial_base
    if parent == base:
        return (head,)
    if s.kind == "current-changes":
        return _base_mismatch(wt, s, parent)
    chain = gitfacts.first_parent_chain(wt.root, gitfacts.CHAIN_LIMIT)
    genesis = set(s.genesis_paths)
    for i in range(len(chain)):
        before = gitfacts.parent_tree(wt.root, chain, i)
        outside = set(gitfacts.changed_paths(wt.root, before, chain[i].tree)) - genesis
        if outside:
            return deny(
                "delivery-derivation/outside-genesis",
                f"commit {chain[i].commit[:12]} of the delivery range changes "
                f"{inert(sorted(outside)[0])}, which lineage {s.lineage_id} never reviewed",
                _whole_range(wt, s),
            )
        if before == base:
            return tuple(c.commit for c in chain[: i + 1])
    return _base_mismatch(wt, s, parent)


def _whole_range(wt: Worktree, s: LineageFacts) -> str:
    """``start --base-ref`` on the commit the lineage reviewed against, when it is below HEAD."""
    below = ancestor_with_tree(wt, s.initial_base)
    return f"factory review start --base-ref {below}" if below else start_command(wt)


def _base_mismatch(wt: Worktree, s: LineageFacts, parent: str) -> Verdict:
    return deny(
        "receipt-binding/base-mismatch",
        f"HEAD's parent tree {parent[:12]} is not the base {s.initial_base[:12]} "
        f"lineage {s.lineage_id} reviewed against (one delivery commit on the reviewed base)",
        start_command(wt),
        nextcmd.show(s.lineage_id),
    )


def _check(wt: Worktree, req: GateRequest, head: str, parent: str) -> BaseCheck:
    def check(s: LineageFacts) -> Verdict | None:
        delivery = _range(wt, s, head, parent)
        if isinstance(delivery, Verdict):
            return delivery
        if req.remote is None:
            return None
        return _remote_check(wt, req.remote, s, delivery)

    return check


def _remote_check(
    wt: Worktree, remote: str, s: LineageFacts, delivery: tuple[str, ...]
) -> Verdict | None:
    bad = remote_problem(wt, remote)
    if bad is not None:
        return unavailable("pre-push", bad)
    code, out = try_git(
        wt.root, [*REMOTE_SAFETY, "ls-remote", "--upload-pack=git-upload-pack", remote]
    )
    if code != 0:
        return unavailable("pre-push", f"git ls-remote {inert(remote)} failed (exit {code})")
    if not out.strip():
        return _first_publication(wt, s, delivery[0])
    code, out = try_git(wt.root, ["rev-list", delivery[0], "--not", f"--remotes={remote}", "--"])
    unpushed = set(out.decode("ascii").split()) if code == 0 else {"?"}
    extra = sorted(unpushed - set(delivery))
    if extra:
        return deny(
            "delivery-derivation/partial",
            f"the push also sends {len(extra)} commit(s) outside lineage {s.lineage_id}'s delivery "
            f"(first: {extra[0][:12]}): each needs its own approved review",
            start_command(wt),
            nextcmd.validate("pre-push"),
        )
    return None


def _first_publication(wt: Worktree, s: LineageFacts, head: str) -> Verdict | None:
    genesis = set(s.genesis_paths)
    outside = sorted(gitfacts.history_paths(wt.root, head) - genesis)
    approved = gitfacts.tree_blobs(wt.root, s.final_candidate)
    unreviewed = gitfacts.history_blobs(wt.root, head) - approved
    if not outside and not unreviewed:
        return None
    why = (
        f"path {inert(outside[0])} of the history is not a genesis path"
        if outside
        else f"{len(unreviewed)} blob(s) of the history are not in the approved tree"
    )
    return deny(
        "delivery-derivation/first-publication",
        "the remote has no refs, so this push publishes the whole history: " + why,
        "factory review show --lineage " + s.lineage_id,
        nextcmd.validate("pre-push"),
    )
