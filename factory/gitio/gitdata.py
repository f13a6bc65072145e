"""Small read-only git queries the raw snapshot is built from (issue 8 §3).

Each parses one plumbing command's ``-z`` output into Python values; none runs a program
the repository names: ``git status`` gets every filter driver switched off
(:meth:`~factory.gitio.config.RepoConfig.no_filters_env`) and ``--ignore-submodules=dirty``,
so it never starts a ``git status`` inside a submodule (whose configuration could name
programs of its own); :func:`repo_dirty` walks submodules itself, each with its own
configuration neutralised.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from factory.gitio.config import RepoConfig, read_config
from factory.gitio.difftree import DIFF_FLAGS
from factory.gitio.rawfs import RawReader
from factory.gitio.run import run_git, try_git

if TYPE_CHECKING:
    from factory.gitio.index_entries import IndexEntries

GITLINK = "160000"
STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--ignore-submodules=dirty",
)


class TreeEntry(NamedTuple):
    """A (mode, object id) pair of a tree or index entry."""

    mode: str
    oid: str


@dataclass
class Listed:
    """``git ls-files -v --cached --others --exclude-standard``, split by kind.

    ``untracked`` entries ending in ``/`` are nested repositories git will not look into.
    ``hidden`` counts entries marked assume-unchanged or skip-worktree.
    """

    tracked: list[bytes] = field(default_factory=list)
    untracked: list[bytes] = field(default_factory=list)
    unmerged: list[bytes] = field(default_factory=list)
    hidden: int = 0


def c_quote(path: bytes) -> bytes:
    """``path`` in git's C-style quotes (``"a\\tb"``), as ``--stdin-paths`` reads it."""
    out = bytearray(b'"')
    for byte in path:
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte >= 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


@functools.lru_cache(maxsize=16)
def object_format(root: Path) -> str:
    """``sha1`` or ``sha256``: the hash of this repository's object ids (fixed at
    ``git init``, so remembered per folder)."""
    out = run_git(root, ["rev-parse", "--show-object-format"], what="git rev-parse")
    return out.decode("ascii").strip() or "sha1"


def null_oid(fmt: str) -> str:
    return "0" * (64 if fmt == "sha256" else 40)


# 2100-01-01: later than any index entry's mtime (see private_index_copy).
_FUTURE_NS = 4_102_444_800 * 10**9


def private_index_copy(real: str, dest: str) -> None:
    """Copy the index file ``real`` to ``dest`` for a command that writes it (``write-tree``
    stores its cache-tree extension back; ``update-index``).

    git re-reads every *racily clean* entry — one whose file's mtime is not older than the
    index file's — through the repository's conversions and clean filter when it writes an
    index. The copy's mtime is set far in the future, so no entry is racy and writing the
    copy reads no worktree file and runs no filter (a test plants one). Entries and object
    ids are unchanged, which is all these commands need.
    """
    shutil.copyfile(real, dest)
    unracy(dest)


def unracy(index: str) -> None:
    """Set ``index``'s mtime far in the future again (after a command rewrote it)."""
    os.utime(index, ns=(_FUTURE_NS, _FUTURE_NS))


@functools.lru_cache(maxsize=16)
def index_file(root: Path) -> str | None:
    """The path of the real index of the checkout at ``root`` (remembered per folder)."""
    code, out = try_git(root, ["rev-parse", "--path-format=absolute", "--git-path", "index"])
    return os.fsdecode(out.rstrip(b"\n")) if code == 0 and out.strip() else None


@functools.lru_cache(maxsize=8)
def tree_entries(root: Path, tree: str) -> Mapping[bytes, TreeEntry]:
    """Every blob and gitlink of ``tree`` (recursively) by path, read-only. A tree id names
    its content, so the answer is remembered per (folder, tree)."""
    out = run_git(root, ["ls-tree", "-r", "-z", "--full-tree", tree], what="git ls-tree")
    entries: dict[bytes, TreeEntry] = {}
    for rec in out.split(b"\0"):
        if rec:
            meta, _, path = rec.partition(b"\t")
            mode, _, rest = meta.partition(b" ")
            entries[path] = TreeEntry(mode.decode("ascii"), rest.rpartition(b" ")[2].decode())
    return MappingProxyType(entries)


def list_files(root: Path) -> Listed:
    """What git tracks or would track in the worktree (see :class:`Listed`)."""
    out = run_git(
        root,
        ["ls-files", "-v", "-z", "--cached", "--others", "--exclude-standard"],
        what="git ls-files",
    )
    listed = Listed()
    for rec in out.split(b"\0"):
        if len(rec) < 3:
            continue
        tag, path = rec[:1], rec[2:]
        if tag == b"?":
            listed.untracked.append(path)
        elif tag == b"M":
            if not listed.unmerged or listed.unmerged[-1] != path:
                listed.unmerged.append(path)
        else:
            listed.tracked.append(path)
            if tag.islower() or tag == b"S":
                listed.hidden += 1
    return listed


def untracked_in_status(status: bytes) -> list[bytes]:
    """The paths of the ``?`` records of ``git status --porcelain=v2 -z`` output, walked
    record by record (a renamed entry's original-path field is skipped whole, so a path
    that itself begins with ``? `` is never mistaken for a record)."""
    fields = status.split(b"\0")[:-1]
    found: list[bytes] = []
    i = 0
    while i < len(fields):
        rec = fields[i]
        if rec.startswith(b"? "):
            found.append(rec[2:])
        i += 2 if rec.startswith(b"2 ") else 1
    return found


def listed_from(index: IndexEntries, status: bytes) -> Listed:
    """What :func:`list_files` would say, from a read of the index entries and a
    ``git status --porcelain=v2 -z --untracked-files=all`` taken while the index files
    held the same bytes: the tracked, unmerged and hidden entries are the index's, the
    untracked paths are the status's ``?`` records (the same exclude rules as
    ``--exclude-standard``; a nested repository is one path ending in ``/`` in both).
    Held equal to :func:`list_files` by ``tests/gitio/test_listing_fold.py``."""
    return Listed(
        list(index.tracked), untracked_in_status(status), list(index.unmerged), index.hidden
    )


Entries = dict[bytes, tuple[str, str | None]]


def _raw_entries(fields: list[bytes]) -> tuple[Entries, int]:
    """Parse ``--raw -z`` records from ``fields``; return them and how many fields they used."""
    seen: Entries = {}
    i = 0
    while i + 1 < len(fields) and fields[i].startswith(b":"):
        meta = fields[i].decode("ascii").lstrip(":").split(" ")
        deleted = meta[4].startswith("D")
        seen[fields[i + 1]] = ("000000", None) if deleted else (meta[1], meta[3])
        i += 2
    return seen, i


def diff_entries(root: Path, a: str, b: str) -> Entries:
    """``diff-tree --raw`` of two trees: path → (new mode, new id or ``None`` if deleted)."""
    out = run_git(root, ["diff-tree", *DIFF_FLAGS, "-z", "--raw", a, b], what="git diff-tree")
    return _raw_entries(out.split(b"\0"))[0]


def diff_with_patch(root: Path, a: str, b: str) -> tuple[Entries, bytes]:
    """:func:`diff_entries` and the binary patch ``a`` → ``b`` from one ``diff-tree``: with
    ``--raw -z -p`` git prints the raw records, an empty record, then exactly the bytes
    ``diff-tree -p --binary`` alone prints."""
    out = run_git(
        root,
        ["diff-tree", *DIFF_FLAGS, "-z", "--raw", "-p", "--binary", a, b],
        what="git diff-tree -p",
    )
    fields = out.split(b"\0")
    seen, used = _raw_entries(fields)
    if not seen:
        return seen, b""
    offset = sum(len(f) + 1 for f in fields[:used]) + 1  # the records and the empty one
    return seen, out[offset:]


def status_bytes(root: Path, config: RepoConfig | None = None) -> bytes:
    """``git status --porcelain=v2 -z --untracked-files=all`` without any filter program."""
    cfg = config if config is not None else read_config(root)
    return run_git(root, STATUS_ARGS, env_extra=cfg.no_filters_env(), what="git status")


def status_and_ignored(root: Path, config: RepoConfig | None = None) -> tuple[bytes, set[bytes]]:
    """:func:`status_bytes` and the ignored folders, from one ``git status`` that also lists
    what ``--ignored=matching`` shows. Its ``!`` records come after all others and are cut
    out record by record (a renamed entry's extra original-path field is kept whole), so
    the status bytes are exactly those :func:`status_bytes` gives."""
    cfg = config if config is not None else read_config(root)
    out = run_git(
        root,
        [*STATUS_ARGS, "--ignored=matching"],
        env_extra=cfg.no_filters_env(),
        what="git status",
    )
    kept: list[bytes] = []
    folders: set[bytes] = set()
    fields = out.split(b"\0")[:-1]
    i = 0
    while i < len(fields):
        rec = fields[i]
        if rec.startswith(b"! "):
            if rec.endswith(b"/"):
                folders.add(rec[2:-1])
            i += 1
            continue
        width = 2 if rec.startswith(b"2 ") else 1
        kept += fields[i : i + width]
        i += width
    return b"".join(f + b"\0" for f in kept), folders


def repo_head(root: Path) -> str | None:
    """The commit HEAD of the repository checked out at ``root`` names, if any."""
    code, out = try_git(root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])
    if code != 0:
        return None
    return out.decode("ascii", "replace").strip() or None


class IndexFlags(NamedTuple):
    """What one listing of the index says beyond its paths (:func:`index_flags`)."""

    gitlinks: dict[bytes, str]  # submodule path -> the commit the index records
    hidden: int  # entries marked assume-unchanged or skip-worktree


def index_flags(root: Path) -> IndexFlags:
    """The index's gitlinks and its hidden entries, from one ``git ls-files -s -v`` pass.

    Tags per ``git ls-files -v``: lower case = assume-unchanged, ``S`` = skip-worktree; git
    status, ``git add -A`` and the clean check all skip such entries, so a change to one
    would be in the worktree but in no status, tree or patch."""
    out = run_git(root, ["ls-files", "-s", "-v", "-z"], what="git ls-files -s -v")
    links: dict[bytes, str] = {}
    hidden = 0
    for rec in out.split(b"\0"):
        tag, _, entry = rec.partition(b" ")
        if not entry:
            continue
        if tag.islower() or tag == b"S":
            hidden += 1
        if entry.startswith(GITLINK.encode() + b" "):
            meta, _, path = entry.partition(b"\t")
            links[path] = meta.split(b" ")[1].decode("ascii")
    return IndexFlags(links, hidden)


def gitlinks(root: Path) -> dict[bytes, str]:
    """Submodule paths of the index at ``root`` and the commit each records."""
    return index_flags(root).gitlinks


def repo_dirty(root: Path) -> bool:
    """Whether the checkout at ``root`` has any change, its checked-out submodules included
    (each read with its own configuration's filters switched off)."""
    return bool(status_bytes(root)) or submodules_dirty(root)


def submodules_dirty(root: Path, links: Mapping[bytes, str] | None = None) -> bool:
    """Whether a checked-out submodule of ``root`` has a change inside it (recursively);
    ``links``: the index's gitlinks when the caller already listed them."""
    for path, commit in (gitlinks(root) if links is None else links).items():
        sub = Path(os.fsdecode(os.path.join(os.fsencode(root), path)))
        if os.path.lexists(sub / ".git") and (repo_head(sub) != commit or repo_dirty(sub)):
            return True
    return False


def list_ignored_folders(root: Path) -> set[bytes]:
    """The worktree's ignored folders, from one ``git ls-files --ignored --directory``."""
    out = run_git(
        root,
        ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
        what="git ls-files --ignored",
    )
    return {rec.rstrip(b"/") for rec in out.split(b"\0") if rec.endswith(b"/")}


def special_files(root: Path, ignored_folders: set[bytes] | None = None) -> list[bytes]:
    """FIFOs, sockets and devices in the worktree that are not ignored.

    git's own listing skips them silently, so a change consisting of one would be in no
    tree. Ignored folders (``ignored_folders`` when the caller has them, e.g. from
    :func:`status_and_ignored`), nested repositories and submodules are not entered
    (:meth:`factory.gitio.rawfs.RawReader.walk`, which a snapshot uses to read its paths
    in the same pass).
    """
    skip = ignored_folders if ignored_folders is not None else list_ignored_folders(root)
    return not_ignored(root, RawReader(root).walk((), skip))


def not_ignored(root: Path, found: list[bytes]) -> list[bytes]:
    """The paths of ``found`` git does not ignore, sorted (one ``git check-ignore``)."""
    if not found:
        return []
    out = run_git(
        root,
        ["check-ignore", "-z", "--stdin"],
        stdin=b"".join(p + b"\0" for p in found),
        ok_codes=(0, 1),  # 1: none of them is ignored
        what="git check-ignore",
    )
    ignored = set(out.split(b"\0"))
    return sorted(p for p in found if p not in ignored)
