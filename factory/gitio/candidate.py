"""Derive a candidate change by code (SPEC A-4).

The candidate is what differs between the base tree (HEAD's tree at entry) and the
candidate tree (the worktree's non-ignored content, untracked files included, built
through a temporary index). It is described by:

* the exact ``git status --porcelain=v2 -z --untracked-files=all`` bytes;
* the binary patch base tree → candidate tree (``git diff-tree -p --binary``), which
  therefore includes new untracked files — unlike a ``git diff HEAD`` patch;
* for each changed or deleted path: state, git mode, size and SHA-256 of the worktree file.

A changed path that is a symlink, a submodule/gitlink (also a submodule whose own files
changed: that content is in no superproject tree or patch), sits below a symlinked folder,
is not a regular file, or whose name is not UTF-8 is refused as ``unsupported-changed-path``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from factory.errors import Failure
from factory.gitio.run import run_git
from factory.gitio.worktree import Worktree, candidate_tree, hidden_entries, status_bytes

CHUNK = 1 << 20
_REGULAR_MODES = frozenset({"100644", "100755"})
_DIFF_FLAGS = ("-r", "--no-renames", "--no-ext-diff", "--no-textconv", "--full-index")


class IndexHidesChanges(Failure):
    """The index marks entries assume-unchanged or skip-worktree (exit 4): their changes
    would be in the worktree but not in the status, candidate tree or patch."""


class UnsupportedChangedPath(Failure):
    """A changed path the candidate cannot bind faithfully (exit 4). No path in the message."""


INDEX_HIDES_CHANGES = IndexHidesChanges.define(
    "index-hides-changes", "clear those bits and rerun on a clean worktree", default=True
)
UNSUPPORTED_CHANGED_PATH = UnsupportedChangedPath.define(
    "unsupported-changed-path",
    "only regular files can be bound: remove it from the change",
    default=True,
)


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One changed path; ``size``/``sha256`` are ``None`` when the path was deleted."""

    path: str
    state: str  # added | modified | deleted
    mode: str
    size: int | None
    sha256: str | None


@dataclass(frozen=True, slots=True)
class DerivedCandidate:
    """Everything A-4 binds, plus the exact bytes of the status and the patch."""

    base_commit: str
    base_tree: str
    candidate_tree: str
    status: bytes
    patch: bytes
    files: tuple[ChangedFile, ...]


def _parse_raw(out: bytes) -> list[tuple[str, str, bytes]]:
    """``diff-tree --raw -z`` → ``(new_mode, status_letter, path_bytes)``."""
    fields = out.split(b"\0")
    rows: list[tuple[str, str, bytes]] = []
    i = 0
    while i + 1 < len(fields) and fields[i]:
        meta = fields[i].decode("ascii").lstrip(":").split(" ")
        rows.append((meta[1], meta[4][:1], fields[i + 1]))
        i += 2
    return rows


def _unsupported(why: str) -> UnsupportedChangedPath:
    return UNSUPPORTED_CHANGED_PATH(f"a changed path {why}")


def _hash_regular(root: Path, rel: bytes) -> tuple[int, str]:
    # Every folder on the way must be a real folder: a symlinked parent would let the
    # bytes we hash live outside the worktree.
    parts = rel.split(b"/")
    current = os.fsencode(root)
    for part in parts[:-1]:
        current = os.path.join(current, part)
        if not stat.S_ISDIR(os.lstat(current).st_mode):
            raise _unsupported("lies below a symlink or non-folder")
    full = os.path.join(current, parts[-1])
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _unsupported("is a symlink or cannot be opened") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _unsupported("is not a regular file")
        h = hashlib.sha256()
        size = 0
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return size, h.hexdigest()


def changed_files(wt: Worktree, base_tree: str, cand_tree: str) -> tuple[ChangedFile, ...]:
    """Every path that differs between the two trees, in git's (byte) order."""
    out = run_git(
        wt.root,
        ["diff-tree", *_DIFF_FLAGS, "-z", "--raw", base_tree, cand_tree],
        what="git diff-tree",
    )
    files: list[ChangedFile] = []
    for mode, letter, raw_path in _parse_raw(out):
        try:
            path = raw_path.decode("utf-8")
        except UnicodeDecodeError:
            raise _unsupported("has a name that is not UTF-8") from None
        if letter == "D":
            files.append(ChangedFile(path, "deleted", "000000", None, None))
            continue
        if mode not in _REGULAR_MODES:
            raise _unsupported("is a symlink or submodule")
        size, sha = _hash_regular(wt.root, raw_path)
        files.append(ChangedFile(path, "added" if letter == "A" else "modified", mode, size, sha))
    return tuple(files)


def binary_patch(wt: Worktree, base_tree: str, cand_tree: str) -> bytes:
    """The binary patch base tree → candidate tree (plumbing, so UI config cannot reshape it)."""
    return run_git(
        wt.root,
        ["diff-tree", "-p", "--binary", *_DIFF_FLAGS, base_tree, cand_tree],
        what="git diff-tree -p",
    )


def submodule_changed(status: bytes) -> bool:
    """Whether ``status --porcelain=v2 -z`` reports a submodule with changes.

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
                return True
        i += 2 if kind == b"2 " else 1
    return False


def derive(wt: Worktree, base_commit: str, base_tree: str) -> DerivedCandidate:
    """Derive the candidate of ``wt`` against ``base_commit`` (SPEC A-4).

    Raises:
        IndexHidesChanges: an index entry is assume-unchanged or skip-worktree.
        UnsupportedChangedPath: see the module docstring.
        GitFailure: a git query failed.
    """
    if hidden_entries(wt):
        raise INDEX_HIDES_CHANGES(
            "the index marks files assume-unchanged or skip-worktree, so their changes "
            "cannot be bound"
        )
    status = status_bytes(wt)
    if submodule_changed(status):
        raise _unsupported("is a submodule with changes inside it")
    cand = candidate_tree(wt, base_commit)
    files = changed_files(wt, base_tree, cand)
    patch = binary_patch(wt, base_tree, cand) if files else b""
    return DerivedCandidate(base_commit, base_tree, cand, status, patch, files)
