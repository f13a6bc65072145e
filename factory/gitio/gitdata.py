"""Small read-only git queries the raw snapshot is built from (issue 8 §3).

Each parses one plumbing command's ``-z`` output into Python values; none runs a program
the repository names: ``git status`` gets every filter driver switched off
(:meth:`~factory.gitio.config.RepoConfig.no_filters_env`) and ``--ignore-submodules=dirty``,
so it never starts a ``git status`` inside a submodule (whose configuration could name
programs of its own); :func:`repo_dirty` walks submodules itself, each with its own
configuration neutralised.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from factory.gitio.config import RepoConfig, read_config
from factory.gitio.run import run_git, try_git

GITLINK = "160000"
STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--ignore-submodules=dirty",
)
DIFF_FLAGS = ("-r", "--no-renames", "--no-ext-diff", "--no-textconv", "--full-index")


@dataclass(frozen=True, slots=True)
class TreeEntry:
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


def object_format(root: Path) -> str:
    """``sha1`` or ``sha256``: the hash of this repository's object ids."""
    out = run_git(root, ["rev-parse", "--show-object-format"], what="git rev-parse")
    return out.decode("ascii").strip() or "sha1"


def null_oid(fmt: str) -> str:
    return "0" * (64 if fmt == "sha256" else 40)


def tree_entries(root: Path, tree: str) -> dict[bytes, TreeEntry]:
    """Every blob and gitlink of ``tree`` (recursively) by path."""
    out = run_git(root, ["ls-tree", "-r", "-z", "--full-tree", tree], what="git ls-tree")
    entries: dict[bytes, TreeEntry] = {}
    for rec in out.split(b"\0"):
        if rec:
            meta, _, path = rec.partition(b"\t")
            mode, _, rest = meta.partition(b" ")
            entries[path] = TreeEntry(mode.decode("ascii"), rest.rpartition(b" ")[2].decode())
    return entries


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


def diff_entries(root: Path, a: str, b: str) -> dict[bytes, tuple[str, str | None]]:
    """``diff-tree --raw`` of two trees: path → (new mode, new id or ``None`` if deleted)."""
    out = run_git(root, ["diff-tree", *DIFF_FLAGS, "-z", "--raw", a, b], what="git diff-tree")
    fields = out.split(b"\0")
    seen: dict[bytes, tuple[str, str | None]] = {}
    for i in range(0, len(fields) - 1, 2):
        if not fields[i]:
            break
        meta = fields[i].decode("ascii").lstrip(":").split(" ")
        deleted = meta[4].startswith("D")
        seen[fields[i + 1]] = ("000000", None) if deleted else (meta[1], meta[3])
    return seen


def status_bytes(root: Path, config: RepoConfig | None = None) -> bytes:
    """``git status --porcelain=v2 -z --untracked-files=all`` without any filter program."""
    cfg = config if config is not None else read_config(root)
    return run_git(root, STATUS_ARGS, env_extra=cfg.no_filters_env(), what="git status")


def repo_head(root: Path) -> str | None:
    """The commit HEAD of the repository checked out at ``root`` names, if any."""
    code, out = try_git(root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])
    if code != 0:
        return None
    return out.decode("ascii", "replace").strip() or None


def gitlinks(root: Path) -> dict[bytes, str]:
    """Submodule paths of the index at ``root`` and the commit each records."""
    out = run_git(root, ["ls-files", "-s", "-z"], what="git ls-files -s")
    links: dict[bytes, str] = {}
    for rec in out.split(b"\0"):
        if rec.startswith(GITLINK.encode() + b" "):
            meta, _, path = rec.partition(b"\t")
            links[path] = meta.split(b" ")[1].decode("ascii")
    return links


def repo_dirty(root: Path) -> bool:
    """Whether the checkout at ``root`` has any change, its checked-out submodules included
    (each read with its own configuration's filters switched off)."""
    return bool(status_bytes(root)) or submodules_dirty(root)


def submodules_dirty(root: Path) -> bool:
    """Whether a checked-out submodule of ``root`` has a change inside it (recursively)."""
    for path, commit in gitlinks(root).items():
        sub = Path(os.fsdecode(os.path.join(os.fsencode(root), path)))
        if os.path.lexists(sub / ".git") and (repo_head(sub) != commit or repo_dirty(sub)):
            return True
    return False


def _ignored_folders(root: Path) -> set[bytes]:
    out = run_git(
        root,
        ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
        what="git ls-files --ignored",
    )
    return {rec.rstrip(b"/") for rec in out.split(b"\0") if rec.endswith(b"/")}


def special_files(root: Path) -> list[bytes]:
    """FIFOs, sockets and devices in the worktree that are not ignored.

    git's own listing skips them silently, so a change consisting of one would be in no
    tree. Ignored folders, nested repositories and submodules are not entered.
    """
    skip = _ignored_folders(root)
    top = os.fsencode(root)
    found: list[bytes] = []
    stack: list[bytes] = [b""]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(os.path.join(top, rel) if rel else top)
        except OSError:
            continue
        with it:
            for de in it:
                name = os.fsencode(de.name)
                path = rel + b"/" + name if rel else name
                if not rel and name == b".git":
                    continue
                if de.is_dir(follow_symlinks=False):
                    if path not in skip and not os.path.lexists(os.path.join(de.path, b".git")):
                        stack.append(path)
                elif not de.is_file(follow_symlinks=False) and not de.is_symlink():
                    mode = os.lstat(de.path).st_mode
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                        found.append(path)
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
