"""Which base a review of the checkout is against, when HEAD's tree is not it (issue 23 §1).

A review of "what changed" is current-changes against HEAD by default. Once the change is
committed, or rebased onto a moved upstream, HEAD's tree *is* the candidate and a review
against it is empty; the base that works is a commit below HEAD. :func:`ancestor_with_tree`
finds the first-parent ancestor whose tree a lineage reviewed against (recover keeps that
base); :func:`suggested_base` names the concrete commit a printed
``factory review start --base-ref …`` uses: the merge base with the branch's upstream when
it has one, else HEAD's first parent. No program of the repository runs: rev-parse,
merge-base and rev-list only.
"""

from __future__ import annotations

from factory.gitio.run import try_git
from factory.gitio.worktree import Worktree

#: How far down the first-parent chain an ancestor base is looked for.
CHAIN_LIMIT = 256


def _one(wt: Worktree, args: list[str]) -> str | None:
    code, out = try_git(wt.root, args)
    text = out.decode("ascii", "replace").strip() if code == 0 else ""
    return text.split()[0] if text else None


def head_commit(wt: Worktree) -> str | None:
    return _one(wt, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])


def head_tree(wt: Worktree) -> str | None:
    return _one(wt, ["rev-parse", "--verify", "-q", "HEAD^{tree}"])


def ancestor_with_tree(wt: Worktree, tree: str) -> str | None:
    """The newest commit of HEAD's first-parent chain whose tree is ``tree`` (None if none)."""
    code, out = try_git(
        wt.root,
        ["rev-list", "--first-parent", f"--max-count={CHAIN_LIMIT}", "--format=%H %T", "HEAD"],
    )
    if code != 0:
        return None
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == tree:
            return parts[0]
    return None


def suggested_base(wt: Worktree) -> str | None:
    """The commit to review the committed change against (None on a root or unborn HEAD)."""
    head = head_commit(wt)
    if head is None:
        return None
    upstream = _one(wt, ["rev-parse", "--verify", "-q", "@{upstream}^{commit}"])
    if upstream is not None:
        base = _one(wt, ["merge-base", upstream, head])
        if base is not None and base != head:
            return base
    return _one(wt, ["rev-parse", "--verify", "-q", "HEAD^1^{commit}"])


def start_command(wt: Worktree) -> str:
    """``factory review start`` with the concrete ``--base-ref`` when HEAD has a base below."""
    base = suggested_base(wt)
    return f"factory review start --base-ref {base}" if base else "factory review start"
