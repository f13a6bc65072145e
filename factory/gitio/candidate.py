"""Derive a candidate change by code (SPEC A-4; issue 8 §3).

The candidate is what differs between the base tree (HEAD's tree at entry) and the
candidate tree: the raw-bytes snapshot of the worktree (:mod:`factory.gitio.snapshot`),
untracked non-ignored files included. It is described by:

* the exact ``git status --porcelain=v2 -z --untracked-files=all`` bytes (every filter
  driver switched off, so no repository program runs);
* the binary patch base tree → candidate tree (``git diff-tree -p --binary``), which
  therefore includes new untracked files — unlike a ``git diff HEAD`` patch;
* for each changed or deleted path: state, git mode, size and SHA-256 of the bytes on
  disk, which are exactly the blob in the candidate tree;
* whether git's own conversions would store other blobs for these files
  (:mod:`factory.gitio.conversions`), and the case-fold/NFC collision groups among the
  candidate tree's paths.

A changed path that is a symlink, a submodule/gitlink (also a submodule whose own files
changed: that content is in no superproject tree or patch), an untracked nested
repository, sits below a symlinked folder, is a FIFO, socket or device, or whose name is
not UTF-8 is refused as ``unsupported-changed-path``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from factory.collisions import CollisionGroup, collision_groups
from factory.errors import Failure
from factory.gitio.config import read_config
from factory.gitio.conversions import conversions_differ
from factory.gitio.gitdata import listed_from, status_and_ignored
from factory.gitio.index_entries import IndexEntries
from factory.gitio.rawfs import StatCache
from factory.gitio.snapshot import (
    UNSUPPORTED_CHANGED_PATH,
    Baseline,
    Change,
    Problem,
    State,
    snapshot,
    unsupported,
)
from factory.gitio.worktree import Worktree


class IndexHidesChanges(Failure):
    """The index marks entries assume-unchanged or skip-worktree (exit 4): their changes
    would be in the worktree but not in the status, candidate tree or patch."""


INDEX_HIDES_CHANGES = IndexHidesChanges.define(
    "index-hides-changes", "clear those bits and rerun on a clean worktree", default=True
)


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One changed path; ``size``/``sha256`` are ``None`` when the path was deleted."""

    path: str
    state: State
    mode: str
    size: int | None
    sha256: str | None


@dataclass(frozen=True)
class DerivedCandidate:
    """Everything A-4 binds, plus the exact bytes of the status and the patch.

    ``conversions_differ``: git's own conversions would store, for at least one changed
    file, a blob other than its raw bytes. ``collisions``: groups of the candidate tree's
    paths that are equal under case folding or Unicode NFC. ``cache``: the stat cache for
    the next derivation of the same worktree.
    """

    base_commit: str
    base_tree: str
    candidate_tree: str
    status: bytes
    patch: bytes
    files: tuple[ChangedFile, ...]
    conversions_differ: bool = False
    collisions: tuple[CollisionGroup, ...] = ()
    cache: StatCache = field(default_factory=StatCache)


def _changed_path(why: str) -> str:
    return f"a changed path {why}"


def _changed_file(c: Change) -> ChangedFile:
    try:
        path = c.path.decode("utf-8")
    except UnicodeDecodeError:
        raise UNSUPPORTED_CHANGED_PATH(_changed_path("has a name that is not UTF-8")) from None
    return ChangedFile(path, c.state, c.mode, c.size, c.sha256)


def submodule_changed(status: bytes) -> bool:
    """Whether ``status --porcelain=v2 -z`` reports a submodule with changes."""
    return changed_submodule(status) is not None


_FIELDS = {b"1 ": 8, b"2 ": 9, b"u ": 10}  # splits before the path, by record kind


def changed_submodule(status: bytes) -> bytes | None:
    """The path of the first submodule ``status --porcelain=v2 -z`` reports with changes.

    The ``<sub>`` field of changed (``1``), renamed (``2``, followed by one more record,
    the original path) and unmerged (``u``) entries is ``S<c><m><u>`` for a submodule. A
    submodule's own edits are not in the superproject's tree or patch, so they cannot be
    bound.
    """
    records = status.split(b"\0")
    i = 0
    while i < len(records):
        rec = records[i]
        kind = rec[:2]
        if kind in (b"1 ", b"2 ", b"u "):
            fields = rec.split(b" ", 3)
            if len(fields) > 2 and fields[2].startswith(b"S"):
                return rec.split(b" ", _FIELDS[kind])[-1]
        i += 2 if kind == b"2 " else 1
    return None


def derive(
    wt: Worktree,
    base_commit: str,
    base_tree: str,
    baseline: Baseline | None = None,
    *,
    cache: StatCache | None = None,
    details: bool = True,
    index: IndexEntries | None = None,
) -> DerivedCandidate:
    """Derive the candidate of ``wt`` against ``base_commit`` (SPEC A-4).

    ``baseline`` is the raw state recorded at entry (untouched files whose bytes git's
    checkout converted stay unchanged); ``cache`` the previous derivation's stat cache.
    ``details=False`` skips what is recorded beside the identity (``conversions_differ``,
    ``collisions``), for a re-derivation that only compares identities. ``index``: the
    index entries as read while the index files held the bytes they hold now (the caller
    vouches for that, e.g. by the git directories' binding); the listing then comes from
    them and this derivation's own ``git status``, with no ``git ls-files`` of its own.

    Raises:
        IndexHidesChanges: an index entry is assume-unchanged or skip-worktree.
        UnsupportedChangedPath: see the module docstring.
        GitFailure: a git query failed.
        RawChanged: a file kept changing while it was read.
    """
    cfg = read_config(wt.root)
    status, ignored = status_and_ignored(wt.root, cfg)
    listed = listed_from(index, status) if index is not None else None
    snap = snapshot(
        wt.root, base_tree, baseline, cache=cache, ignored_folders=ignored, listed=listed
    )
    if snap.hidden:
        raise INDEX_HIDES_CHANGES(
            "the index marks files assume-unchanged or skip-worktree, so their changes "
            "cannot be bound"
        )
    if snap.problems:
        raise unsupported(snap.problems[0])
    sub = changed_submodule(status)
    if sub is not None:
        raise unsupported(Problem(sub, "submodule"))
    files = tuple(_changed_file(c) for c in snap.changes)
    patch = snap.patch
    written = [(c.path, c.oid) for c in snap.changes if c.state != "deleted"]
    return DerivedCandidate(
        base_commit,
        base_tree,
        snap.tree,
        status,
        patch,
        files,
        conversions_differ=details and conversions_differ(wt.root, cfg, written),
        collisions=tuple(collision_groups(snap.paths)) if details else (),
        cache=snap.cache,
    )
