"""Small git queries the gates share: the first-parent chain of HEAD, the paths between two
trees, the staged tree of an index, the blobs of a tree (SPEC R).

Everything runs through :mod:`factory.gitio.run` (argv only, scrubbed environment, no
repository-configured program): ``rev-list`` rather than ``log`` (``log.showSignature``
would run gpg), ``diff-tree`` with ``--no-ext-diff --no-textconv``, and trees written only
into private temporary indexes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from factory.display import inert
from factory.documents.canonical import sha256_hex
from factory.gitio.difftree import changed_names
from factory.gitio.run import run_git, try_git
from factory.gitio.worktree import EMPTY_TREE

CHAIN_LIMIT = 1000  # first-parent commits a gate walks looking for a base


@dataclass(frozen=True, slots=True)
class ChainCommit:
    """One commit of HEAD's first-parent chain: id, tree, parent ids."""

    commit: str
    tree: str
    parents: tuple[str, ...]


def first_parent_chain(root: Path, limit: int) -> tuple[ChainCommit, ...]:
    """HEAD and its first parents, newest first (empty on an unborn branch)."""
    code, out = try_git(
        root,
        [
            "rev-list",
            "--first-parent",
            f"--max-count={limit}",
            "--no-commit-header",
            "--format=%H %T %P",
            "HEAD",
            "--",
        ],
    )
    if code != 0:
        return ()
    chain = []
    for line in out.decode("ascii").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            chain.append(ChainCommit(parts[0], parts[1], tuple(parts[2:])))
    return tuple(chain)


def parent_tree(root: Path, chain: tuple[ChainCommit, ...], i: int) -> str:
    """The tree of commit ``i``'s first parent (the empty tree for a root commit)."""
    if i + 1 < len(chain):
        return chain[i + 1].tree
    c = chain[i]
    if not c.parents:
        return EMPTY_TREE
    out = run_git(root, ["rev-parse", f"{c.parents[0]}^{{tree}}"], what="git rev-parse")
    return out.decode("ascii").strip()


def changed_paths(root: Path, base: str, cand: str) -> tuple[str, ...]:
    """Sorted paths that differ between two trees (``surrogateescape`` for odd bytes)."""
    return changed_names(root, base, cand)


def tree_of(root: Path, rev: str) -> str | None:
    code, out = try_git(root, ["rev-parse", "--verify", "-q", f"{rev}^{{tree}}"])
    return out.decode("ascii").strip() if code == 0 and out.strip() else None


def commit_of(root: Path, rev: str) -> str | None:
    """The commit ``rev`` names here (None when it names none, or starts with '-')."""
    if rev.startswith("-") or not rev:
        return None
    code, out = try_git(
        root, ["rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}"]
    )
    return out.decode("ascii").strip() if code == 0 and out.strip() else None


def merge_base(root: Path, a: str, b: str) -> str | None:
    code, out = try_git(root, ["merge-base", a, b])
    return out.decode("ascii").strip() if code == 0 and out.strip() else None


class IndexUnavailable(Exception):
    """The index a commit is being made from cannot be read (a derivation problem)."""


def hook_index(git_dir: Path, env: dict[str, str]) -> Path:
    """The index file the commit is being made from: ``GIT_INDEX_FILE`` of the hook when it
    names a file inside this checkout's git dir (git sets it for every commit hook: the
    index lock, or a temporary index for ``git commit PATH``), else ``<git-dir>/index``."""
    given = env.get("GIT_INDEX_FILE")
    if not given:
        return git_dir / "index"
    path = Path(os.path.realpath(given))
    if not path.is_relative_to(git_dir):
        raise IndexUnavailable(f"GIT_INDEX_FILE {inert(given)} is outside this checkout's git dir")
    return path


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes (None when it does not exist)."""
    try:
        return sha256_hex(path.read_bytes())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IndexUnavailable(f"the index cannot be read ({exc.strerror})") from None


def staged_tree(root: Path, index: Path) -> str:
    """The tree a commit from ``index`` would record: ``write-tree`` on a private copy (the
    real index — or the commit's lock — is only read)."""
    with tempfile.TemporaryDirectory(prefix="factory-gate-index-") as tmp:
        copy = Path(tmp) / "index"
        try:
            shutil.copyfile(index, copy)
        except FileNotFoundError:
            return EMPTY_TREE  # no index yet: nothing staged
        except OSError as exc:
            raise IndexUnavailable(f"the index cannot be read ({exc.strerror})") from None
        out = run_git(
            root, ["write-tree"], env_extra={"GIT_INDEX_FILE": str(copy)}, what="git write-tree"
        )
    return out.decode("ascii").strip()


def tree_blobs(root: Path, tree: str) -> set[str]:
    """Every blob id of ``tree`` (recursively)."""
    out = run_git(root, ["ls-tree", "-r", "-z", "--full-tree", tree], what="git ls-tree")
    blobs = set()
    for rec in out.split(b"\0"):
        meta = rec.split(b"\t", 1)[0].split(b" ")
        if len(meta) == 3 and meta[1] == b"blob":
            blobs.add(meta[2].decode("ascii"))
    return blobs


def history_blobs(root: Path, head: str) -> set[str]:
    """Every blob reachable from ``head``'s whole history."""
    out = run_git(
        root,
        ["rev-list", "--objects", "--filter=object:type=blob", "--filter-provided-objects", head],
        what="git rev-list --objects",
    )
    return {line.split(b" ", 1)[0].decode("ascii") for line in out.splitlines() if line}


def history_paths(root: Path, head: str) -> set[str]:
    """Every path any commit of ``head``'s history added, changed or deleted."""
    out = run_git(
        root,
        [
            "log",
            "--root",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--format=",
            "--name-only",
            "-z",
            "--no-show-signature",
            head,
            "--",
        ],
        what="git log --name-only",
    )
    return {os.fsdecode(p.strip(b"\n")) for p in out.split(b"\0") if p.strip(b"\n")}
