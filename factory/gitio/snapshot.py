"""A git tree of what a worktree holds, built from raw bytes and lstat modes (issue 8 §3).

This is the one place factory turns files on disk into git objects. It never runs a
program the repository names (no clean/smudge filter, no textconv, no hook, no
fsmonitor) and applies no conversion: a blob in the tree holds exactly the bytes on disk,
its mode is the one ``lstat`` gives, so a receipt's per-file SHA-256, mode, tree and patch
agree by construction.

:func:`snapshot` compares every path of a base tree and every path git would track in the
worktree (``git ls-files --cached --others --exclude-standard``) with the bytes on disk:

* a path whose raw (mode, blob) equals its base entry — or, given a :class:`Baseline`, the
  raw state recorded for it earlier — keeps its base entry; anything else is a
  :class:`Change` whose new entry is the raw bytes. The baseline matters when git's own
  checkout conversions (``core.autocrlf``, ``eol``, filters) made the bytes on disk differ
  from the stored blobs: without it, such untouched files would count as changed;
* what cannot be bound faithfully is a :class:`Problem` instead (a changed or new symlink,
  a submodule whose commit or files changed, an untracked nested repository, a FIFO,
  socket or device git would otherwise see, a path below a symlinked folder, an unmerged
  index entry).

The new tree is written through a private temporary index (a copy of the real index when
it holds the base tree, else ``read-tree`` of the base; ``update-index --index-info``;
``write-tree``); the blobs of changed files are written by :mod:`factory.gitio.blobstore`
with ``hash-object -w --no-filters`` (from 100 files on, as one pack by ``fast-import``,
which runs no filter either) and their ids must equal the ids computed here from the
bytes that were hashed, or the snapshot fails (something still writes). One
``diff-tree --raw -p`` of the two trees must then name exactly the changes read — which
also proves the copied index held the base tree — and gives the binary patch.

Callers: the agent run's candidate (:mod:`factory.gitio.candidate`) and review snapshots.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from factory.errors import Failure
from factory.gitio import blobstore, gitdata
from factory.gitio.attributes import autocrlf_converts, converting_paths
from factory.gitio.config import RepoConfig, read_config
from factory.gitio.gitdata import TreeEntry
from factory.gitio.rawfs import RawChanged, RawEntry, RawReader, StatCache, read_worktree
from factory.gitio.run import GitFailure, run_git


class UnsupportedChangedPath(Failure):
    """A changed path a snapshot cannot bind faithfully (exit 4). No path in the message;
    ``problem`` (when known) names it for the caller that attributes it (a reviewer's
    change inside a submodule is that submodule's, not the candidate's)."""

    problem: Problem | None = None


UNSUPPORTED_CHANGED_PATH = UnsupportedChangedPath.define(
    "unsupported-changed-path",
    "only regular files can be bound: remove it from the change",
    default=True,
)
SNAPSHOT_MISMATCH = GitFailure.define("snapshot-mismatch", "rerun on a quiet worktree")
PROBLEM_TEXT = {
    "symlink": "is a symlink",
    "submodule": "is a submodule or gitlink whose commit changed",
    "submodule-dirty": "is a submodule with changes inside it",
    "nested-repository": "is a nested git repository",
    "below-symlink": "lies below a symlink or non-folder",
    "special-file": "is a FIFO, socket or device",
    "unmerged": "is an unmerged index entry",
}
State = Literal["added", "modified", "deleted"]
ZERO_MODE = "000000"


@dataclass(frozen=True, slots=True)
class Change:
    """One path whose snapshot entry differs from the base tree's.

    ``mode``/``oid`` are the new entry (``000000``/``""`` when deleted); ``size`` and
    ``sha256`` describe the bytes on disk (``None`` when deleted).
    """

    path: bytes
    state: State
    mode: str
    oid: str
    size: int | None
    sha256: str | None


@dataclass(frozen=True, slots=True)
class Problem:
    """A path the snapshot cannot bind faithfully, and why (a stable kebab-case reason)."""

    path: bytes
    reason: str


@dataclass(frozen=True)
class Baseline:
    """The raw state of a checkout at an earlier moment (typically a run's entry).

    ``divergent``: base paths whose bytes on disk differed from the base tree then (git's
    checkout conversions), with the raw entry they had. ``cache``: the stat cache of that
    read (in memory only). :func:`encode_divergence` gives ``divergent`` as bytes to store.
    """

    divergent: Mapping[bytes, TreeEntry]
    cache: StatCache = field(default_factory=StatCache)


@dataclass(frozen=True)
class Snapshot:
    """A worktree snapshot: the tree, what differs from the base, what could not be bound.

    ``paths``: every path of ``tree`` (byte order). ``hidden``: index entries marked
    assume-unchanged or skip-worktree, whose changes git would hide. ``cache``: the stat
    cache to pass to the next snapshot of the same worktree. ``patch``: the binary patch
    ``base_tree`` → ``tree`` (``git diff-tree -p --binary``; empty without changes).
    """

    base_tree: str
    tree: str
    changes: tuple[Change, ...]
    problems: tuple[Problem, ...]
    paths: tuple[bytes, ...]
    hidden: int
    cache: StatCache
    patch: bytes = b""


def _raw_tree_entry(raw: RawEntry) -> TreeEntry | None:
    return TreeEntry(raw.mode, raw.oid) if raw.has_bytes else None


def take_baseline(root: Path, base_tree: str, config: RepoConfig | None = None) -> Baseline:
    """Record which base paths' bytes on disk differ from the base tree now.

    Meant for a checkout that git calls clean. A path no conversion can apply to (no
    ``text``/``eol``/``crlf``/``ident``/``filter``/``working-tree-encoding`` attribute, and
    ``core.autocrlf`` off) then holds its blob's bytes: git wrote them unconverted, or
    compared them raw, so it is only ``lstat``-ed (its mode and kind may still differ:
    ``core.fileMode``/``core.symlinks`` false). Every other path is read.
    """
    fmt = gitdata.object_format(root)
    base = {
        p: e for p, e in gitdata.tree_entries(root, base_tree).items() if e.mode != gitdata.GITLINK
    }
    cfg = config if config is not None else read_config(root)
    # every base path's attributes are asked (an untracked .gitattributes may apply too)
    converting = set(base) if autocrlf_converts(cfg) else converting_paths(root, list(base))
    reader = RawReader(root, fmt, sha256=False)
    divergent: dict[bytes, TreeEntry] = {}
    for path, entry in base.items():
        regular = entry.mode in ("100644", "100755")
        assume = entry.oid if regular and path not in converting else None
        now = _raw_tree_entry(reader.read(path, assume))
        if now is not None and now != entry:
            divergent[path] = now
    return Baseline(divergent, reader.cache)


def encode_divergence(divergent: Mapping[bytes, TreeEntry]) -> bytes:
    """``mode SP oid TAB path NUL`` per entry, in byte order of the path."""
    return b"".join(
        b"%s %s\t%s\0" % (e.mode.encode(), e.oid.encode(), p) for p, e in sorted(divergent.items())
    )


def decode_divergence(data: bytes) -> dict[bytes, TreeEntry]:
    """Inverse of :func:`encode_divergence`. Raises ``ValueError`` on malformed bytes."""
    out: dict[bytes, TreeEntry] = {}
    for rec in data.split(b"\0")[:-1] if data else []:
        meta, _, path = rec.partition(b"\t")
        mode, _, oid = meta.partition(b" ")
        if not path or not mode or not oid:
            raise ValueError("malformed divergence record")
        out[path] = TreeEntry(mode.decode("ascii"), oid.decode("ascii"))
    return out


_REASON = {"special": "special-file", "below-link": "below-symlink"}


class _Compare:
    """Decides, path by path, the snapshot entry (see the module docstring)."""

    def __init__(
        self, root: Path, base: Mapping[bytes, TreeEntry], baseline: Baseline | None
    ) -> None:
        self.root = root
        self.base = base
        self.divergent = baseline.divergent if baseline is not None else {}
        self.changes: list[Change] = []
        self.problems: list[Problem] = []
        self.paths: list[bytes] = []

    def unchanged(self, path: bytes, raw: TreeEntry) -> bool:
        b = self.base.get(path)
        return (b is not None and raw == b) or self.divergent.get(path) == raw

    def visit(self, path: bytes, raw: RawEntry) -> None:
        base = self.base.get(path)
        if base is not None and base.mode == gitdata.GITLINK:
            self._gitlink(path, base, raw)
            return
        entry = _raw_tree_entry(raw)
        if entry is not None and self.unchanged(path, entry):
            self.paths.append(path)
            return
        if entry is None:
            if raw.kind in ("missing", "dir"):
                if base is not None:
                    self.changes.append(Change(path, "deleted", ZERO_MODE, "", None, None))
                return
            self.problems.append(Problem(path, _REASON.get(raw.kind, raw.kind)))
            return
        if raw.kind == "symlink":
            self.problems.append(Problem(path, "symlink"))
            return
        state: State = "modified" if base is not None else "added"
        self.changes.append(Change(path, state, raw.mode, raw.oid, raw.size, raw.sha256))
        self.paths.append(path)

    def _gitlink(self, path: bytes, base: TreeEntry, raw: RawEntry) -> None:
        self.paths.append(path)
        if raw.kind != "dir":
            if raw.kind != "missing":
                self.problems.append(Problem(path, "submodule"))
            return
        sub = Path(os.fsdecode(os.path.join(os.fsencode(self.root), path)))
        if not os.path.lexists(sub / ".git"):
            return  # not checked out: git treats it as unchanged too
        if gitdata.repo_head(sub) != base.oid:
            self.problems.append(Problem(path, "submodule"))
        elif gitdata.repo_dirty(sub):
            self.problems.append(Problem(path, "submodule-dirty"))


def snapshot(
    root: Path,
    base_tree: str,
    baseline: Baseline | None = None,
    *,
    cache: StatCache | None = None,
    ignored_folders: set[bytes] | None = None,
    with_patch: bool = True,
    listed: gitdata.Listed | None = None,
) -> Snapshot:
    """The raw-bytes tree of the worktree at ``root`` against ``base_tree``.

    Args:
        root: the top folder of a checkout (primary or linked).
        base_tree: the tree id the snapshot is compared with.
        baseline: raw state recorded earlier (:func:`take_baseline`); its stat cache is used
            unless ``cache`` is given.
        cache: the stat cache of the previous snapshot of this worktree.
        ignored_folders: the worktree's ignored folders when the caller already listed
            them (:func:`factory.gitio.gitdata.status_and_ignored`).
        with_patch: ``False`` when the caller has no use for the patch: the cross-check
            of the written tree then reads ``diff-tree --raw`` only (``patch`` is empty).
        listed: the worktree's listing when the caller has it
            (:func:`factory.gitio.gitdata.listed_from`), else ``git ls-files`` is asked.

    Raises:
        GitFailure: a git query failed.
        RawChanged: a file kept changing while it was read.
    """
    fmt = gitdata.object_format(root)
    base = gitdata.tree_entries(root, base_tree)
    if listed is None:
        listed = gitdata.list_files(root)
    previous = cache if cache is not None else (baseline.cache if baseline else None)
    paths = sorted(set(base) | set(listed.tracked) | set(listed.untracked))
    skip = ignored_folders if ignored_folders is not None else gitdata.list_ignored_folders(root)
    # one walk reads the listed paths it meets and finds the special files git skips
    reader, found = read_worktree(root, fmt, previous, paths, skip)
    cmp = _Compare(root, base, baseline)
    for path in paths:
        if path.endswith(b"/"):
            cmp.problems.append(Problem(path.rstrip(b"/"), "nested-repository"))
            continue
        cmp.visit(path, reader.read(path))
    cmp.problems += [Problem(p, "unmerged") for p in listed.unmerged]
    cmp.problems += [Problem(p, "special-file") for p in gitdata.not_ignored(root, found)]
    changes = tuple(cmp.changes)
    tree, patch = base_tree, b""
    if changes and not cmp.problems:
        tree, patch = _write_tree(root, base_tree, changes, gitdata.null_oid(fmt), with_patch)
    return Snapshot(
        base_tree,
        tree,
        changes,
        tuple(sorted(cmp.problems, key=lambda p: p.path)),
        tuple(cmp.paths),
        listed.hidden,
        reader.cache,
        patch,
    )


def unsupported(problem: Problem) -> UnsupportedChangedPath:
    """The typed error for a snapshot problem (the message names the kind, not the path)."""
    why = PROBLEM_TEXT.get(problem.reason, "cannot be bound")
    error = UNSUPPORTED_CHANGED_PATH(f"a changed path {why}")
    error.problem = problem
    return error


def raw_tree(root: Path, base_tree: str) -> str:
    """The raw-bytes tree of the worktree at ``root`` (no baseline).

    Raises:
        UnsupportedChangedPath: something in it cannot be bound (see :class:`Problem`).
        GitFailure, RawChanged: as :func:`snapshot`.
    """
    snap = snapshot(root, base_tree)
    if snap.problems:
        raise unsupported(snap.problems[0])
    return snap.tree


def _write_tree(
    root: Path, base_tree: str, changes: tuple[Change, ...], null: str, with_patch: bool = True
) -> tuple[str, bytes]:
    blobstore.write_blobs(root, changes)
    records = [b"0 %s\t%s\0" % (null.encode(), c.path) for c in changes if c.state == "deleted"]
    records += [
        b"%s %s\t%s\0" % (c.mode.encode(), c.oid.encode(), c.path)
        for c in changes
        if c.state != "deleted"
    ]
    with tempfile.TemporaryDirectory(prefix="factory-snapshot-") as tmp:
        index = os.path.join(tmp, "index")
        # Fast path: start from a copy of the real index, which usually holds the base tree
        # (one read-tree process less); the cross-check proves it did, else start over
        # from the base tree itself.
        real = gitdata.index_file(root)
        if real is not None and os.path.isfile(real):
            gitdata.private_index_copy(real, index)
            try:
                tree = _apply(root, index, b"".join(records))
                patch = _patch_if_matching(root, base_tree, tree, changes, with_patch)
                if patch is not None:
                    return tree, patch
            except GitFailure:
                pass
            os.unlink(index)
        env = {"GIT_INDEX_FILE": index}
        run_git(root, ["read-tree", base_tree], env_extra=env, what="git read-tree")
        tree = _apply(root, index, b"".join(records))
    patch = _patch_if_matching(root, base_tree, tree, changes, with_patch)
    if patch is None:
        raise SNAPSHOT_MISMATCH("the tree git wrote does not match the files read")
    return tree, patch


def _apply(root: Path, index: str, records: bytes) -> str:
    env = {"GIT_INDEX_FILE": index}
    run_git(
        root,
        ["update-index", "-z", "--index-info"],
        env_extra=env,
        stdin=records,
        what="git update-index",
    )
    gitdata.unracy(index)  # update-index wrote it now: its entries could look racy again
    out = run_git(root, ["write-tree"], env_extra=env, what="git write-tree")
    return out.decode("ascii").strip()


def _patch_if_matching(
    root: Path, base_tree: str, tree: str, changes: tuple[Change, ...], with_patch: bool = True
) -> bytes | None:
    """The patch (empty without ``with_patch``), when git's own diff of the two trees names
    exactly our changes (same entries); ``None`` when it does not."""
    if with_patch:
        seen, patch = gitdata.diff_with_patch(root, base_tree, tree)
    else:
        seen, patch = gitdata.diff_entries(root, base_tree, tree), b""
    return patch if seen == {c.path: (c.mode, c.oid or None) for c in changes} else None


__all__ = [
    "Baseline",
    "Change",
    "Problem",
    "RawChanged",
    "Snapshot",
    "TreeEntry",
    "decode_divergence",
    "encode_divergence",
    "snapshot",
    "take_baseline",
]
