"""Review targets derived from git (SPEC R): the candidate tree of a checkout, its changed
paths with modes and line counts, and the fix delta of a correction attempt.

The tree comes from :func:`factory.gitio.snapshot.snapshot`: raw bytes and ``lstat``
modes through a private temporary index, no filter, textconv, hook or fsmonitor program,
every non-ignored untracked file a member, ignored state not, and every path the base
tracked still bound even if an ignore rule matches it now. Line counts come from git's
``diff-tree --numstat`` between the two trees (binary files count zero, goldens count zero
but stay in the identity); the caller's numbers are never used.
"""

from __future__ import annotations

from dataclasses import dataclass

from factory.display import inert
from factory.gitio import snapshot as raw_snapshot
from factory.gitio.difftree import DIFF_FLAGS, tree_changes
from factory.gitio.indexcache import index_stat_cache
from factory.gitio.run import run_git, try_git
from factory.gitio.worktree import EMPTY_TREE, Worktree
from factory.review.errors import BASE_REF_UNKNOWN, UNSUPPORTED_PATH, ReviewRefused
from factory.review.policy import LoadedPolicy
from factory.review.risk import ChangedPath
from factory.review.state import Snapshot, SnapshotKind, make_snapshot


@dataclass(frozen=True, slots=True)
class LiveTarget:
    """What the checkout holds now, against a base tree."""

    snapshot: Snapshot
    changes: tuple[ChangedPath, ...]

    @property
    def changed_lines(self) -> int:
        return sum(c.lines for c in self.changes)

    @property
    def golden(self) -> int:
        return sum(1 for c in self.changes if c.golden)


def _text(path: bytes) -> str:
    try:
        return path.decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewRefused(
            f"a changed path is not UTF-8 ({inert(path.decode('utf-8', 'replace'))})",
            code=UNSUPPORTED_PATH,
            next=("factory review start",),
        ) from None


def _head(wt: Worktree) -> str | None:
    code, out = try_git(wt.root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])
    return out.decode("ascii").strip() if code == 0 and out.strip() else None


def _tree_of(wt: Worktree, commit: str) -> str:
    out = run_git(wt.root, ["rev-parse", "--verify", f"{commit}^{{tree}}"], what="git rev-parse")
    return out.decode("ascii").strip()


def resolve_base(wt: Worktree, base_ref: str | None) -> tuple[SnapshotKind, str]:
    """``current-changes`` against HEAD's tree (the empty tree on an unborn branch), or
    ``base-diff`` against the merge base of ``base_ref`` and HEAD.

    Raises:
        ReviewRefused: ``review-base-ref-unknown`` when ``base_ref`` names no commit.
    """
    head = _head(wt)
    if base_ref is None:
        return "current-changes", _tree_of(wt, head) if head else EMPTY_TREE
    code, out = (
        (1, b"")
        if base_ref.startswith("-")
        else try_git(wt.root, ["rev-parse", "--verify", "-q", f"{base_ref}^{{commit}}"])
    )
    if code != 0 or not out.strip():
        raise ReviewRefused(
            f"--base-ref {inert(base_ref)} names no commit here",
            code=BASE_REF_UNKNOWN,
            next=("factory review start --base-ref REF",),
        )
    base = out.decode("ascii").strip()
    if head is not None:
        code, out = try_git(wt.root, ["merge-base", base, head])
        if code == 0 and out.strip():
            base = out.decode("ascii").strip()
    return "base-diff", _tree_of(wt, base)


def diff_changes(
    wt: Worktree, base: str, cand: str, policy: LoadedPolicy
) -> tuple[ChangedPath, ...]:
    """Every path that differs between two trees, with modes and numstat counts."""
    changes = []
    for c in tree_changes(wt.root, base, cand):
        text = _text(c.path)
        golden = policy.is_golden(text)
        changes.append(
            ChangedPath(text, c.old_mode, c.new_mode, c.added, c.deleted, c.binary, golden)
        )
    return tuple(changes)


def _untracked(wt: Worktree) -> tuple[str, ...]:
    """Non-ignored untracked files (the intended untracked members of the candidate)."""
    out = run_git(
        wt.root, ["ls-files", "-z", "--others", "--exclude-standard"], what="git ls-files"
    )
    return tuple(_text(p) for p in out.split(b"\0") if p and not p.endswith(b"/"))


def live_target(
    wt: Worktree, kind: SnapshotKind, base_tree: str, policy: LoadedPolicy
) -> LiveTarget:
    """The checkout's candidate against ``base_tree`` now.

    Raises:
        ReviewRefused: ``review-unsupported-path`` for what the snapshot cannot bind (a
            symlink change, submodule edit, nested repository, special file, unmerged or
            hidden index entry).
    """
    cache = index_stat_cache(wt.root, base_tree)
    snap = raw_snapshot.snapshot(wt.root, base_tree, cache=cache, with_patch=False)
    if snap.problems:
        first = snap.problems[0]
        raise ReviewRefused(
            f"{len(snap.problems)} path(s) cannot be reviewed faithfully (first: "
            f"{inert(first.path.decode('utf-8', 'replace'))}: {first.reason})",
            code=UNSUPPORTED_PATH,
            next=("factory review start",),
        )
    if snap.hidden:
        raise ReviewRefused(
            "the index marks files assume-unchanged or skip-worktree, which hides their "
            "changes from every tree ('git update-index --no-assume-unchanged' clears it)",
            code=UNSUPPORTED_PATH,
            next=("factory review start",),
        )
    changes = diff_changes(wt, base_tree, snap.tree, policy)
    untracked = _untracked(wt)
    paths = tuple(c.path for c in changes)
    return LiveTarget(make_snapshot(kind, base_tree, snap.tree, paths, untracked), changes)


def patch(wt: Worktree, base: str, cand: str, limit: int) -> bytes | None:
    """The binary patch between two trees, or None when it is larger than ``limit``."""
    out = run_git(
        wt.root, ["diff-tree", "-p", "--binary", *DIFF_FLAGS, base, cand], what="git diff-tree -p"
    )
    return out if len(out) <= limit else None


@dataclass(frozen=True, slots=True)
class FixDelta:
    """A correction attempt as git measures it: previous candidate → the checkout now."""

    fix: Snapshot
    candidate: Snapshot
    lines: int


def measure_fix(
    wt: Worktree,
    initial: Snapshot,
    previous_tree: str,
    ledger: tuple[str, ...],
    policy: LoadedPolicy,
) -> FixDelta:
    """The fix delta of the edit made since ``previous_tree`` (the lineage's current
    candidate), and the new candidate against the lineage's base."""
    live = live_target(wt, initial.kind, initial.base_tree, policy)
    tree = live.snapshot.candidate_tree
    delta = diff_changes(wt, previous_tree, tree, policy)
    fix = make_snapshot(
        "fix-diff",
        previous_tree,
        tree,
        tuple(c.path for c in delta),
        live.snapshot.intended_untracked,
        ledger,
    )
    return FixDelta(fix, live.snapshot, sum(c.lines for c in delta))
