"""Find the repository a folder belongs to, and resolve revisions in it (issue 16).

Any folder inside a repository will do: its main worktree, a linked worktree, a folder in
its git directory, a bare repository, a submodule's checkout. Everything here only reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from factory.errors import Refused
from factory.gitio.run import run_git, try_git


class RepositoryRefused(Refused):
    """The repository or the base revision cannot be used; nothing was created (exit 2)."""


_define = RepositoryRefused.define
REPO_MISSING = _define("repo-missing", "pass --repo a folder inside a git repository")
NOT_A_GIT_REPOSITORY = _define(
    "not-a-git-repository", "pass --repo a repository, a worktree of one, or a folder inside it"
)
REPOSITORY_PARTIAL_CLONE = _define(
    "repository-partial-clone",
    "create the worktree yourself ('git worktree add') and pass it as --worktree",
)
REPOSITORY_EMPTY = _define("repository-empty", "commit a base first")
BASE_UNBORN = _define("base-unborn", "pass --base with a commit")
BASE_MISSING = _define("base-missing", "pass --base a commit, branch or tag of this repository")
BASE_MISSING_SHALLOW = _define(
    "base-missing-shallow", "fetch more history (git fetch --deepen) or choose another --base"
)
BASE_NOT_A_COMMIT = _define("base-not-a-commit", "pass --base a commit (or a tag of one)")


@dataclass(frozen=True, slots=True)
class Repository:
    """A repository as git sees it from ``start`` (physical paths).

    ``anchor`` is the folder a new worktree goes beside by default: the worktree ``start``
    lies in, else the main worktree (the common dir's parent when it is named ``.git``),
    else the bare repository itself. ``worktrees`` are the folders of every registered
    worktree, existing or not (``git worktree list``).
    """

    start: Path
    common_dir: Path
    anchor: Path
    worktrees: tuple[Path, ...]
    object_format: str
    shallow: bool


def _text(out: bytes) -> str:
    return out.decode("utf-8", "surrogateescape").strip()


def _registered(common: Path) -> tuple[Path, ...]:
    out = run_git(common, ["worktree", "list", "--porcelain", "-z"], what="git worktree list")
    return tuple(
        Path(os.fsdecode(rec[len(b"worktree ") :]))
        for rec in out.split(b"\0")
        if rec.startswith(b"worktree ")
    )


def locate_repository(path: Path) -> Repository:
    """Resolve the repository ``path`` lies in.

    Raises:
        RepositoryRefused: ``repo-missing``, ``not-a-git-repository``,
            ``repository-partial-clone`` (its objects may be fetched from the network on
            demand, and factory never reaches the network for a checkout).
    """
    if not path.is_dir():
        raise REPO_MISSING("--repo is not an existing folder")
    code, out = try_git(
        path,
        [
            "rev-parse",
            "--path-format=absolute",
            "--git-common-dir",
            "--show-object-format",
            "--is-shallow-repository",
        ],
    )
    parts = _text(out).split("\n")
    if code != 0 or len(parts) < 3:
        raise NOT_A_GIT_REPOSITORY("--repo is not inside a git repository")
    common = Path(os.path.realpath(parts[0]))
    object_format, shallow = parts[1], parts[2] == "true"
    code, top = try_git(path, ["rev-parse", "--path-format=absolute", "--show-toplevel"])
    if code == 0 and _text(top):
        anchor = Path(os.path.realpath(_text(top)))
    else:  # a bare repository, or a folder inside a git directory
        anchor = common.parent if common.name == ".git" else common
    if _partial_clone(common):
        raise REPOSITORY_PARTIAL_CLONE(
            "--repo is a partial clone: checking out its base may fetch objects from the "
            "network, which factory never does"
        )
    return Repository(
        start=Path(os.path.realpath(path)),
        common_dir=common,
        anchor=anchor,
        worktrees=_registered(common),
        object_format=object_format,
        shallow=shallow,
    )


_TRUE = frozenset({b"", b"true", b"yes", b"on", b"1"})


def _partial_clone(common: Path) -> bool:
    """A promisor remote is configured (``extensions.partialClone``, or any
    ``remote.<name>.promisor`` true): missing objects would be fetched on demand."""
    pattern = r"^(extensions\.partialclone|remote\..*\.promisor)$"
    out = try_git(common, ["config", "-z", "--get-regexp", pattern])[1]
    for record in out.split(b"\0"):
        key, _, value = record.partition(b"\n")
        if key == b"extensions.partialclone" or (key and value.lower() in _TRUE):
            return True
    return False


def _has_any_ref(repo: Repository) -> bool:
    out = try_git(repo.common_dir, ["for-each-ref", "--count=1", "--format=%(refname)"])[1]
    return bool(out.strip())


def _peel(repo: Repository, rev: str) -> tuple[str | None, str | None, str | None]:
    """``(object, commit, tree)`` ids ``rev`` names, ``None`` where it names none.

    One ``cat-file --batch-check`` reads the three expressions as data (a revision that
    starts with ``-`` is no option there) and only reports objects that exist — unlike
    ``rev-parse``, which resolves a full hex id whether or not the object is present.
    """
    if "\n" in rev or "\r" in rev:
        return None, None, None
    lines = f"{rev}\n{rev}^{{commit}}\n{rev}^{{commit}}^{{tree}}\n".encode()
    out = run_git(
        repo.start,
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        stdin=lines,
        what="git cat-file --batch-check",
    )
    found: list[str | None] = []
    for line in _text(out).split("\n")[:3]:
        oid, _, kind = line.partition(" ")
        found.append(oid if kind in ("commit", "tree", "blob", "tag") else None)
    while len(found) < 3:
        found.append(None)
    return found[0], found[1], found[2]


def _missing(repo: Repository, rev: str) -> RepositoryRefused:
    if not _has_any_ref(repo) and try_git(repo.start, ["rev-parse", "-q", "--verify", "HEAD"])[0]:
        return REPOSITORY_EMPTY("the repository has no commit yet")
    if rev == "HEAD":
        return BASE_UNBORN("HEAD of --repo names a branch with no commit yet")
    if repo.shallow:
        return BASE_MISSING_SHALLOW(
            "--base is not in this repository, a shallow clone: it may lie beyond the boundary"
        )
    return BASE_MISSING("--base names nothing in this repository")


def resolve_base(repo: Repository, base: str | None) -> tuple[str, str]:
    """The full commit id and tree id ``base`` names (default ``HEAD`` of ``repo.start``).

    Resolved once; every later step uses the ids, never the expression.

    Raises:
        RepositoryRefused: ``repository-empty`` (no commit at all), ``base-unborn`` (HEAD
            names a branch with no commit yet), ``base-missing`` / ``base-missing-shallow``
            (nothing by that name here; in a shallow clone it may lie beyond the boundary),
            ``base-not-a-commit`` (a tree, a blob, or a tag of one).
    """
    rev = "HEAD" if base is None else base
    oid, commit, tree = _peel(repo, rev)
    if oid is None:
        raise _missing(repo, rev)
    if commit is None or tree is None:
        raise BASE_NOT_A_COMMIT("--base names an object that is not a commit (a tree or a blob)")
    return commit, tree
