"""The index's entries as git means them, without their stat data (issue 8 §1).

The worker and the repair may refresh their worktree's index (their own ``git status``
rewrites its stat data), so the raw index bytes cannot be compared across their phases.
The tree ``git write-tree`` builds is not enough either: it leaves out intent-to-add
entries (``git add -N``) and ignores the assume-unchanged and skip-worktree bits, so a
worker could stage a path or hide one from every later ``git status`` unseen.

:func:`index_entries_digest` digests, for every entry in path order, its mode, object id,
stage, path and the flag bits that change what git does with it — assume-unchanged
(``CE_VALID``), intent-to-add and skip-worktree — read with ``git ls-files -s --debug``,
which expands a sparse index and resolves a split index, and runs no program (our git
options turn off fsmonitor). Stat data, in-memory bookkeeping bits and the extensions
(cache tree, untracked cache, resolve-undo, split-index link) are left out: git rewrites
them as a side effect of reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from factory.documents.canonical import tagged_sha256
from factory.gitio.run import run_git

INDEX_ENTRIES_TAG = "factory.index-entries/1"
GITLINK = b"160000"
CE_STAGEMASK = 0x3000
CE_VALID = 0x8000  # assume-unchanged
CE_INTENT_TO_ADD = 1 << 29
CE_SKIP_WORKTREE = 1 << 30
MEANINGFUL_FLAGS = CE_STAGEMASK | CE_VALID | CE_INTENT_TO_ADD | CE_SKIP_WORKTREE

_RECORD = re.compile(
    rb"([0-7]+) ([0-9a-f]+) ([0-3])\t([^\0]*)\0"
    rb"(?:  [a-z]+: [^\n]*\n)*?  size: \d+\tflags: ([0-9a-f]+)\n"
)


def parse_entries(out: bytes) -> list[tuple[bytes, bytes, bytes, bytes, int]]:
    """``(path, mode, oid, stage, flags)`` per record of ``git ls-files -s --debug -z``
    output, flags masked to :data:`MEANINGFUL_FLAGS` (pure)."""
    rows = []
    for m in _RECORD.finditer(out):
        mode, oid, stage, path, flags = m.groups()
        rows.append((path, mode, oid, stage, int(flags, 16) & MEANINGFUL_FLAGS))
    return rows


def entries_record(rows: list[tuple[bytes, bytes, bytes, bytes, int]]) -> bytes:
    """The digested bytes: per entry in (path, stage) order, its fields each + NUL (pure)."""
    ordered = sorted(rows, key=lambda r: (r[0], r[3]))
    return b"".join(b"%s\0%s\0%s\0%s\0%x\0" % row for row in ordered)


@dataclass(frozen=True, slots=True)
class IndexEntries:
    """One read of the index: the entries' digest and, from the same bytes, the paths
    ``git ls-files -v --cached`` would list (:func:`listing`), so a derivation that follows
    needs no listing of its own while the index files are unchanged."""

    digest: str
    tracked: tuple[bytes, ...]
    unmerged: tuple[bytes, ...]
    hidden: int
    gitlinks: Mapping[bytes, str]  # submodule path -> the commit its entry records


def listing(
    rows: list[tuple[bytes, bytes, bytes, bytes, int]],
) -> tuple[tuple[bytes, ...], tuple[bytes, ...], int]:
    """``(tracked, unmerged, hidden)`` as ``git ls-files -v --cached`` tags them (pure).

    An entry at a stage other than 0 is tagged ``M`` (unmerged) unless assume-unchanged,
    which lower-cases the tag (``m``: listed as tracked and hidden, as git prints it); a
    stage-0 entry is tracked, hidden when assume-unchanged or skip-worktree."""
    tracked: list[bytes] = []
    unmerged: list[bytes] = []
    hidden = 0
    for path, _mode, _oid, stage, flags in rows:
        valid = bool(flags & CE_VALID)
        if stage != b"0" and not valid:
            if not unmerged or unmerged[-1] != path:
                unmerged.append(path)
            continue
        tracked.append(path)
        hidden += valid or (stage == b"0" and bool(flags & CE_SKIP_WORKTREE))
    return tuple(tracked), tuple(unmerged), hidden


def read_index_entries(root: Path) -> IndexEntries:
    """The index entries of the checkout at ``root``: their digest (see the module
    docstring; an empty or missing index digests as no entries) and their listing.

    Raises:
        GitFailure: git could not read the index.
    """
    out = run_git(root, ["ls-files", "-s", "--debug", "-z"], what="git ls-files --debug")
    rows = parse_entries(out)
    tracked, unmerged, hidden = listing(rows)
    digest = tagged_sha256(INDEX_ENTRIES_TAG, entries_record(rows))
    links = {path: oid.decode("ascii") for path, mode, oid, _, _ in rows if mode == GITLINK}
    return IndexEntries(digest, tracked, unmerged, hidden, MappingProxyType(links))


def index_entries_digest(root: Path) -> str:
    """``sha256:<hex>`` over the index entries of the checkout at ``root``
    (:func:`read_index_entries`).

    Raises:
        GitFailure: git could not read the index.
    """
    return read_index_entries(root).digest
