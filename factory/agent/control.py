"""Bind the git directories by exclusion, for the reviewer and the editors (issue 8 §1).

:func:`bind_control` binds every entry under the worktree's own git dir (labels
``git-dir/…``) and under the common dir (``common-dir/…``) — configuration, hooks, ``info/``,
refs and their logs, ``packed-refs``, every in-progress operation's state, sparse-checkout
patterns, per-worktree configuration, ``modules/``, other worktrees' state, files no git
version knows yet — plus the worktree's ``.git`` file (``worktree/.git``), with the
walker and stat cache of :mod:`factory.agent.binding`. An allow-list misses whatever it
does not name: a reviewer that wrote ``MERGE_HEAD`` got APPROVE, and the user's next commit
became a merge with a parent the reviewer chose.

Left out, in every git directory found there (the common dir, the worktree's git dir,
other worktrees' git dirs under ``worktrees/``, submodule repositories under ``modules/`` —
of the common dir and of the worktree's own git dir, where a linked worktree keeps its
submodules' repositories):

* ``objects/`` — content-addressed object storage, which only grows; reading it would cost
  time proportional to the repository's history. Its two configuration files,
  ``objects/info/alternates`` and ``objects/info/http-alternates`` (which other stores git
  trusts), *are* bound by name, without listing the folder;
* ``lfs/`` — Git LFS's content-addressed store and its temporary files;
* ``fsmonitor--daemon/`` and ``fsmonitor--daemon.ipc`` — the fsmonitor daemon's cookies
  and socket, rewritten as a side effect of every query when the daemon runs;
* ``index``, ``index.lock``, ``sharedindex.*`` of *other* checkouts (the primary
  checkout's in the common dir, other worktrees', submodules') — git rewrites an index to
  refresh its stat data as a side effect of reads (``git status`` there);
* in the common dir, the worktree's own git dir under ``worktrees/`` (bound once, as
  ``git-dir/…``).

The worktree's own index *is* bound. The worker, the repair and the reviewer all
refresh it with their own ``git status``/``git diff``, so :func:`editor_ignores` leaves it
(but not a left ``index.lock``) out of their comparison — HEAD and the index *entries*
are checked instead
(:mod:`factory.gitio.index_entries`: modes, ids, stages, intent-to-add and hide-bits).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from factory.agent.binding import (
    ABSENT,
    RACY_MARGIN_NS,
    Bound,
    Entry,
    NameTest,
    digest,
    entry_at,
    trust_before,
    walk,
)
from factory.gitio.worktree import Worktree

CONTROL_TAG = "factory.git-control/2"
WALKERS = 1  # the git directories are mostly small files: threads cost more than they save
_STORES = frozenset({b"objects", b"lfs"})
_BY_NAME = (b"objects/info/alternates", b"objects/info/http-alternates")
_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _index_file(name: bytes) -> bool:
    return name in (b"index", b"index.lock") or name.startswith(b"sharedindex.")


def editor_ignores(label: bytes) -> bool:
    """Labels the worker's and the repair's comparison leaves out: their own index and its
    split-index parts, which their own ``git status`` rewrites. Not ``index.lock``: git
    removes it before it returns, so one still there after the phase is a lock left behind
    (every later git command in the worktree fails on it)."""
    head, _, name = label.partition(b"/")
    return head == b"git-dir" and (name == b"index" or name.startswith(b"sharedindex."))


IndexFiles = tuple[tuple[bytes, bytes], ...]  # (label, record) of the own index files


def own_index_records(bound: Bound) -> IndexFiles | None:
    """The binding's records of the worktree's own index files (``index`` and its
    split-index parts), in label order. Two bindings with equal records saw the same
    index bytes — any write changes a file's ctime, so its record — hence the same index
    entries: a run reuses the entries' digest instead of reading them again.

    ``None`` (vouches for nothing) when one of them is not a regular file: a symlink's
    record is its target path, not the bytes git reads through it, so a write there
    would leave the records equal."""
    own = [(label, e) for label, e in sorted(bound.entries.items()) if editor_ignores(label)]
    if any(e.kind != "f" for _, e in own):
        return None
    return tuple((label, e.rec) for label, e in own)


def _is_git_dir(path: bytes) -> bool:
    return os.path.isfile(os.path.join(path, b"HEAD")) and (
        os.path.isdir(os.path.join(path, b"objects"))
        or os.path.isfile(os.path.join(path, b"commondir"))
    )


def _subfolders(folder: bytes) -> list[bytes]:
    try:
        with os.scandir(folder) as it:
            return [os.fsencode(de.name) for de in it if de.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _join(*parts: bytes) -> bytes:
    return b"/".join(p for p in parts if p)


def _git_dirs(top: bytes) -> set[bytes]:
    """Relative paths (``b""`` for ``top``) of the git directories stored in ``top``: itself,
    ``worktrees/<name>``, and the repositories under ``modules/`` (whose names may have
    several components), recursively."""
    found = {b""}
    pending = [b""]
    while pending:
        repo = pending.pop()
        for name in _subfolders(os.path.join(top, _join(repo, b"worktrees"))):
            found.add(_join(repo, b"worktrees", name))
        stack = [_join(repo, b"modules")]
        while stack:
            folder = stack.pop()
            for name in _subfolders(os.path.join(top, folder)):
                sub = _join(folder, name)
                if _is_git_dir(os.path.join(top, sub)):
                    found.add(sub)
                    pending.append(sub)
                else:
                    stack.append(sub)
    return found


class _Rules:
    """The skip rule of one labelled walk (see the module docstring and
    :data:`factory.agent.binding.Skip`)."""

    def __init__(self, label: bytes, git_dirs: set[bytes], own: bytes | None, own_index: bool):
        self.roots = {label + b"/" + r if r else label for r in git_dirs}
        self.own_index_root = label if own_index else None
        parent, _, name = (
            (label + b"/" + own).rpartition(b"/") if own is not None else (b"", 0, b"")
        )
        self.own_parent, self.own_name = parent, name

    def __call__(self, prefix: bytes) -> NameTest | None:
        root = prefix in self.roots
        own = prefix == self.own_parent
        if not (root or own):
            return None
        keep_index = prefix == self.own_index_root

        def leave_out(name: bytes) -> bool:
            if own and name == self.own_name:
                return True
            if not root:
                return False
            if name in _STORES or name.startswith(b"fsmonitor--daemon"):
                return True
            return _index_file(name) and not keep_index

        return leave_out


def _relative(inner: Path, outer: Path) -> bytes | None:
    try:
        return os.fsencode(inner.relative_to(outer))
    except ValueError:
        return None


def _by_name(
    label: bytes, path: bytes, previous: dict[bytes, Entry], trust: int, by_stat: int = 0
) -> Entry:
    parent, _, name = path.rpartition(b"/")
    try:
        dfd = os.open(parent, _DIR_OPEN)
    except OSError:
        return ABSENT
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    else:
        return entry_at(dfd, name, st, previous.get(label), trust, by_stat)
    finally:
        os.close(dfd)


def bind_control(wt: Worktree, previous: Bound | None = None) -> Bound:
    """Bind the worktree's ``.git`` file and both git directories by exclusion."""
    started = time.time_ns()
    prev = previous.entries if previous else {}
    trust = trust_before(previous)
    by_stat = started - RACY_MARGIN_NS
    common = os.fsencode(wt.common_dir)
    dot_git = os.fsencode(wt.dot_git)
    entries = {b"worktree/.git": _by_name(b"worktree/.git", dot_git, prev, trust, by_stat)}
    for rel in _BY_NAME:
        label = b"common-dir/" + rel
        entries[label] = _by_name(label, os.path.join(common, rel), prev, trust, by_stat)
    # A linked worktree keeps its submodules' repositories in its own git dir (modules/).
    own = _Rules(b"git-dir", _git_dirs(os.fsencode(wt.git_dir)), None, own_index=True)
    entries.update(walk(os.fsencode(wt.git_dir), b"git-dir", prev, trust, own, WALKERS, by_stat))
    shared = _Rules(
        b"common-dir", _git_dirs(common), _relative(wt.git_dir, wt.common_dir), own_index=False
    )
    entries.update(walk(common, b"common-dir", prev, trust, shared, WALKERS, by_stat))
    return Bound(entries, digest(CONTROL_TAG, entries), started)
