"""Locate a linked worktree and read its entry state (SPEC A-1, A-3).

A *linked* worktree is one whose ``git rev-parse --git-dir`` differs from
``--git-common-dir``. A primary checkout has them equal; so does a submodule's primary
checkout, even though it too has a ``.git`` *file* — which is why the decision is made on
the two git directories, never on the shape of ``.git``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from factory.errors import Refused
from factory.gitio.run import run_git, try_git

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class WorktreeRefused(Refused):
    """The worktree cannot be used; nothing ran (exit 2)."""


_LINKED = "pass the top folder of a linked worktree ('git worktree add <path>')"
WORKTREE_MISSING = WorktreeRefused.define("worktree-missing", _LINKED)
NOT_A_GIT_WORKTREE = WorktreeRefused.define("not-a-git-worktree", _LINKED)
NOT_WORKTREE_ROOT = WorktreeRefused.define("not-worktree-root", _LINKED)
LINKED_WORKTREE_REQUIRED = WorktreeRefused.define("linked-worktree-required", _LINKED)


@dataclass(frozen=True, slots=True)
class Worktree:
    """A linked worktree: its top folder and both git directories (physical paths)."""

    root: Path
    git_dir: Path
    common_dir: Path

    @property
    def dot_git(self) -> Path:
        """The worktree's ``.git`` file (its pointer to ``git_dir``)."""
        return self.root / ".git"


def _lines(out: bytes) -> list[str]:
    return out.decode("utf-8", "surrogateescape").split("\n")


def locate(path: Path) -> Worktree:
    """Resolve ``path`` to a linked worktree whose top folder it is.

    Raises:
        WorktreeRefused: ``worktree-missing``, ``not-a-git-worktree``, ``not-worktree-root``,
            ``linked-worktree-required`` (primary or submodule-primary checkout).
    """
    if not path.is_dir():
        raise WORKTREE_MISSING("--worktree is not an existing folder")
    code, out = try_git(
        path,
        ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"],
    )
    parts = _lines(out)
    if code != 0 or len(parts) < 3 or not parts[0]:
        raise NOT_A_GIT_WORKTREE("--worktree is not inside a git working tree")
    root = Path(os.path.realpath(parts[0]))
    git_dir = Path(os.path.realpath(parts[1]))
    common_dir = Path(os.path.realpath(parts[2]))
    if root != Path(os.path.realpath(path)):
        raise NOT_WORKTREE_ROOT("--worktree is a folder inside a worktree, not its top folder")
    if git_dir == common_dir or not (root / ".git").is_file():
        raise LINKED_WORKTREE_REQUIRED("--worktree is a primary checkout (or a submodule's)")
    return Worktree(root=root, git_dir=git_dir, common_dir=common_dir)


def hidden_entries(wt: Worktree) -> int:
    """How many index entries carry the assume-unchanged or skip-worktree bit.

    git status, ``git add -A`` (so the candidate tree) and the clean check all skip such
    entries: a change to one would be in the worktree but in no status, tree or patch.
    Tags per ``git ls-files -v``: lower case = assume-unchanged, ``S`` = skip-worktree.
    """
    from factory.gitio.gitdata import index_flags

    return index_flags(wt.root).hidden


def head_commit(wt: Worktree) -> str | None:
    """The commit HEAD points at, or ``None`` for an unborn branch."""
    code, out = try_git(wt.root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])
    return out.decode("ascii").strip() if code == 0 and out.strip() else None


def head_ref(wt: Worktree) -> str | None:
    """The branch HEAD names (``refs/heads/...``), or ``None`` when HEAD is detached."""
    code, out = try_git(wt.root, ["symbolic-ref", "-q", "HEAD"])
    return out.decode("utf-8", "surrogateescape").strip() if code == 0 else None


def commit_tree(wt: Worktree, commit: str) -> str:
    """The tree id of ``commit``."""
    out = run_git(wt.root, ["rev-parse", "--verify", f"{commit}^{{tree}}"], what="git rev-parse")
    return out.decode("ascii").strip()


def candidate_tree(wt: Worktree, base_commit: str) -> str:
    """A git tree of the worktree's non-ignored content, untracked files included, built
    from the raw bytes on disk (:func:`factory.gitio.snapshot.raw_tree`: no filter, hook or
    conversion runs; the real index is never written).

    Raises:
        UnsupportedChangedPath: a symlink, FIFO, dirty submodule… the tree cannot hold.
    """
    from factory.gitio.snapshot import raw_tree  # not on the gates' hook path

    return raw_tree(wt.root, commit_tree(wt, base_commit))


def index_path(wt: Worktree) -> Path:
    """The real index file of this worktree (``git rev-parse --git-path index``)."""
    out = run_git(wt.root, ["rev-parse", "--path-format=absolute", "--git-path", "index"])
    return Path(out.decode("utf-8", "surrogateescape").strip())


def index_tree(wt: Worktree) -> str | None:
    """The tree the real index describes, without touching the real index file; ``None``
    when the index holds no tree (unmerged entries, or it cannot be read).

    ``git write-tree`` on the real index would rewrite it (it stores the cache-tree
    extension back), so it runs on a private copy instead
    (:func:`factory.gitio.gitdata.private_index_copy`: no racy entry, so no filter runs).
    """
    import tempfile  # (with shutil: ~2 ms that a finalize process does not need)

    from factory.gitio.gitdata import private_index_copy  # not on the gates' hook path

    with tempfile.TemporaryDirectory(prefix="factory-index-") as tmp:
        copy = Path(tmp) / "index"
        src = index_path(wt)
        if src.exists():
            private_index_copy(os.fspath(src), os.fspath(copy))
        code, out = try_git(wt.root, ["write-tree"], env_extra={"GIT_INDEX_FILE": str(copy)})
    return out.decode("ascii").strip() if code == 0 else None
