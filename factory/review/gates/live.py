"""The live target of each gate, re-derived from git every time (SPEC R).

* **pre-commit** — the worktree and index: the raw-bytes candidate of the checkout against
  ``HEAD^{tree}`` (every non-ignored untracked file a member, as at start), and the tree the
  commit's index would record (the hook's ``GIT_INDEX_FILE``, read through a private copy);
  intended files may be staged, provided the staged tree is the candidate exactly.
* **pre-push** — HEAD's first-parent range: ``HEAD^{tree}`` is the candidate, the first
  parent's tree the base (the empty tree for a root commit); an empty commit is refused.
  See :mod:`factory.review.gates.push` for what the hook adds (pushed commits, remote).
* **pre-pr** — the diff from the boundary (:mod:`factory.review.gates.boundary`) to the
  checkout's candidate: base = the merge base of the boundary commit and HEAD.
* **release** — exactly ``HEAD^{tree}``, plus the SHA-256 of every named artifact.

Each derivation returns a :class:`Derived`: the receipt-independent :class:`~factory.
review.gates.decide.Live`, the receipt-dependent base check, and what the context shows.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from factory.display import inert
from factory.gitio.worktree import EMPTY_TREE, Worktree
from factory.review import nextcmd
from factory.review.gates import gitfacts
from factory.review.gates.decide import BaseCheck, Live, Same
from factory.review.gates.facts import LineageFacts
from factory.review.gates.fastpath import FastCandidate, fast_candidate
from factory.review.gates.verdict import GateName, Verdict, deny

if TYPE_CHECKING:  # built only where needed, not on the hook path (validate.check)
    from factory.gitio.rawfs import StatCache
    from factory.review.gates.result import ArtifactView, BoundaryView

ARTIFACT_LIMIT = 16 << 30


@dataclass(frozen=True)
class GateRequest:
    """What the caller asked for (flags and, inside a hook, the hook's facts)."""

    gate: GateName
    lineage: str | None = None
    base_ref: str | None = None
    artifacts: tuple[Path, ...] = ()
    remote: str | None = None
    pushed: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Derived:
    """One derivation of a gate's live target."""

    live: Live
    base_check: BaseCheck
    boundary: BoundaryView | None = None
    same: Same | None = None  # HEAD-tree gates: git's representation of an approved tree
    artifacts: tuple[ArtifactView, ...] = ()
    cache: StatCache | None = None
    fast: FastCandidate | None = None
    staged: tuple[str | None, str] | None = None  # (index digest, staged tree)

    def fingerprint(self) -> tuple[object, ...]:
        """What must not change between the decision and the final re-check."""
        lv = self.live
        return (
            lv.candidate_tree,
            lv.natural_base,
            lv.paths,
            lv.head_commit,
            lv.staged_tree,
            lv.delivery,
            None if lv.problem is None else lv.problem.denial,
            self.boundary,
            self.artifacts,
        )


def same_base(natural: str | None, gate: str, restart: str = "factory review start") -> BaseCheck:
    """``restart``: the start command that reviews the candidate on today's base."""

    def check(s: LineageFacts) -> Verdict | None:
        if natural == s.initial_base:
            return None
        if natural == s.final_candidate and gate == "pre-commit":
            return deny(
                "receipt-binding/base-mismatch",
                f"HEAD's tree is already the tree lineage {s.lineage_id} approved: the candidate "
                "is committed and nothing under this receipt is left to commit",
                nextcmd.validate("pre-push"),
            )
        return deny(
            "receipt-binding/base-mismatch",
            f"the live {gate} base {str(natural)[:12]} is not the base "
            f"{s.initial_base[:12]} lineage {s.lineage_id} reviewed against",
            restart,
            nextcmd.show(s.lineage_id),
        )

    return check


def unavailable(gate: str, why: str) -> Verdict:
    return deny(
        "delivery-derivation/unavailable",
        f"the {gate} target cannot be derived: {why}",
        nextcmd.validate(gate),
        "git status",
    )


@dataclass(frozen=True)
class Candidate:
    """The checkout's candidate against a base, and how to re-derive it cheaply."""

    tree: str
    paths: tuple[str, ...]
    problem: Verdict | None
    cache: StatCache | None = None
    fast: FastCandidate | None = None


def worktree_candidate(wt: Worktree, base_tree: str, earlier: Derived | None) -> Candidate:
    """The raw-bytes candidate tree of the checkout against ``base_tree`` (through git's
    index where that is provably the same tree), and a problem if it cannot be bound."""
    fast = fast_candidate(wt, base_tree, earlier.fast if earlier is not None else None)
    if fast is not None:
        return Candidate(fast.tree, fast.paths, None, fast=fast)
    from factory.gitio import snapshot as raw_snapshot
    from factory.gitio.indexcache import index_stat_cache

    cache = earlier.cache if earlier is not None else None
    if cache is None or not cache.entries:
        cache = index_stat_cache(wt.root, base_tree)
    snap = raw_snapshot.snapshot(wt.root, base_tree, cache=cache)
    paths = tuple(sorted(os.fsdecode(c.path) for c in snap.changes))
    problem = None
    if snap.problems:
        first = snap.problems[0]
        problem = unavailable(
            "pre-commit",
            f"{len(snap.problems)} path(s) cannot be bound faithfully (first: "
            f"{inert(os.fsdecode(first.path))}: {first.reason})",
        )
    elif snap.hidden:
        problem = unavailable(
            "pre-commit", "the index hides files (assume-unchanged/skip-worktree)"
        )
    return Candidate(snap.tree, paths, problem, cache=snap.cache)


def _staged(
    wt: Worktree, req: GateRequest, earlier: Derived | None
) -> tuple[tuple[str | None, str] | None, Verdict | None]:
    """(index digest, staged tree) of the index the commit is made from."""
    try:
        index = gitfacts.hook_index(wt.git_dir, dict(req.env))
        digest = gitfacts.file_digest(index)
        if earlier is not None and earlier.staged is not None and earlier.staged[0] == digest:
            return earlier.staged, None
        return (digest, gitfacts.staged_tree(wt.root, index)), None
    except gitfacts.IndexUnavailable as exc:
        return None, unavailable("pre-commit", str(exc))


def _vouched(wt: Worktree, req: GateRequest, candidate: str, staged: str) -> str:
    """The staged tree as the candidate itself when it is git's representation of exactly
    this checkout (a converting checkout after ``git add -A``); else unchanged."""
    from factory.review.gates.represent import staged_is_checkout

    index = gitfacts.hook_index(wt.git_dir, dict(req.env))
    return candidate if staged_is_checkout(wt.root, index, candidate, staged) else staged


def derive_pre_commit(wt: Worktree, req: GateRequest, earlier: Derived | None) -> Derived:
    chain = gitfacts.first_parent_chain(wt.root, 1)
    head = chain[0] if chain else None
    base = head.tree if head else EMPTY_TREE
    cand = worktree_candidate(wt, base, earlier)
    staged, bad = _staged(wt, req, earlier)
    staged_tree = staged[1] if staged is not None else None
    if staged_tree is not None and cand.problem is None and staged_tree not in (base, cand.tree):
        staged_tree = _vouched(wt, req, cand.tree, staged_tree)
    live = Live(
        gate="pre-commit",
        kind="current-changes",
        natural_base=base,
        candidate_tree=cand.tree,
        paths=cand.paths,
        head_commit=head.commit if head else None,
        head_tree=base,
        staged_tree=staged_tree,
        delivery=(),
        problem=cand.problem or bad,
    )
    check = ancestry_check(wt, "pre-commit", base)
    return Derived(live, check, cache=cand.cache, fast=cand.fast, staged=staged)


def ancestry_check(wt: Worktree, gate: str, natural: str) -> BaseCheck:
    """Base check for a worktree candidate: a current-changes receipt needs HEAD's tree as
    its base; a base-diff receipt, a base that is the tree of HEAD or a first-parent
    ancestor of it (HEAD still descends from what was reviewed)."""
    same = same_base(natural, gate)

    def check(s: LineageFacts) -> Verdict | None:
        if s.kind == "current-changes":
            return same(s)
        chain = gitfacts.first_parent_chain(wt.root, gitfacts.CHAIN_LIMIT)
        trees = {c.tree for c in chain}
        if chain and not chain[-1].parents:
            trees.add(EMPTY_TREE)
        return None if s.initial_base in trees else same(s)

    return check


def derive_release(wt: Worktree, req: GateRequest) -> Derived:
    chain = gitfacts.first_parent_chain(wt.root, 2)
    if not chain:
        live = _no_head("release")
        return Derived(live, lambda s: None)
    artifacts, problem = hash_artifacts(req.artifacts)
    live = head_live(wt, "release", chain, problem)
    return Derived(live, lambda s: None, artifacts=artifacts, same=lazy_comparer(wt))


def lazy_comparer(wt: Worktree) -> Same:
    """:func:`~factory.review.gates.represent.comparer`, imported only when a tree differs
    (an allow on the hook path never pays for it)."""
    seen: list[Same] = []

    def same(raw_tree: str, git_tree: str) -> str:
        if not seen:
            from factory.review.gates.represent import comparer

            seen.append(comparer(wt.root))
        return seen[0](raw_tree, git_tree)

    return same


def head_live(
    wt: Worktree, gate: GateName, chain: tuple[gitfacts.ChainCommit, ...], problem: Verdict | None
) -> Live:
    """The live target of a gate that judges HEAD's commit: HEAD's tree on its first
    parent's tree (the empty tree for a root commit)."""
    head = chain[0]
    parent = gitfacts.parent_tree(wt.root, chain, 0)
    return Live(
        gate=gate,
        kind="release" if gate == "release" else "commit-range",
        natural_base=parent,
        candidate_tree=head.tree,
        paths=gitfacts.changed_paths(wt.root, parent, head.tree),
        head_commit=head.commit,
        head_tree=head.tree,
        staged_tree=None,
        delivery=(head.commit,),
        problem=problem,
    )


def _no_head(gate: GateName) -> Live:
    return Live(
        gate=gate,
        kind="commit-range" if gate == "pre-push" else "release",
        natural_base=None,
        candidate_tree=EMPTY_TREE,
        paths=(),
        head_commit=None,
        head_tree=None,
        staged_tree=None,
        delivery=(),
        problem=unavailable(gate, "HEAD names no commit (an unborn branch): commit first"),
    )


def _hash_file(path: Path) -> ArtifactView:
    from factory.review.gates.result import ArtifactView

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        if st.st_size > ARTIFACT_LIMIT:
            raise OSError("larger than 16 GiB")
        h, total = hashlib.sha256(), 0
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
            total += len(chunk)
        return ArtifactView(path=os.fspath(path), sha256=h.hexdigest(), bytes=total)
    finally:
        os.close(fd)


def hash_artifacts(paths: tuple[Path, ...]) -> tuple[tuple[ArtifactView, ...], Verdict | None]:
    """SHA-256 and size of each named release artifact (regular files, symlinks refused)."""
    out = []
    for p in paths:
        try:
            out.append(_hash_file(p))
        except OSError as exc:
            why = exc.strerror or str(exc)
            return tuple(out), deny(
                "release-evidence/artifact-unreadable",
                f"release artifact {inert(os.fspath(p))} cannot be hashed ({why})",
                nextcmd.validate("release"),
            )
    return tuple(out), None
