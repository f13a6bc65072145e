"""Take a bound patch into a checkout with git, running no repository program (issue 22).

The git half of ``factory receipt apply``: find the checkout, build the tree the patch
produces in a *private* index (the checkout is not touched until that tree is proven),
then stage it in the checkout and optionally commit it. Every command is plumbing run
through :func:`factory.gitio.run.run_git` with hooks off (``core.hooksPath=/dev/null``:
``update-ref`` would run ``reference-transaction``) and every filter driver switched off
(:meth:`~factory.gitio.config.RepoConfig.no_filters_env`: ``read-tree -u`` would run a
smudge filter).

* :func:`locate_checkout` — the top folder and git directories of a non-bare checkout;
* :func:`patched_tree` — ``read-tree`` + ``apply --cached --binary [--3way]`` +
  ``write-tree`` in a private index; ``None`` when the patch does not apply cleanly;
* :func:`stage` — ``read-tree -m -u HEAD TREE``: the two-tree merge that moves a clean
  index and its files from HEAD's tree to TREE (it refuses to overwrite local changes);
* :func:`index_tree` — the tree the real index holds, written from a private copy;
* :func:`commit` / :func:`move_head` / :func:`new_branch` — ``commit-tree``, ``update-ref``
  with the old value (a concurrent move fails instead of being lost), ``symbolic-ref``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from factory.gitio.config import read_config
from factory.gitio.gitdata import private_index_copy
from factory.gitio.run import run_git, try_git

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
#: The caller's identity for ``commit-tree`` (git's environment is otherwise allow-listed).
IDENTITY_VARS = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
)


@dataclass(frozen=True, slots=True)
class Checkout:
    """A non-bare checkout: its top folder, its own git dir and the common dir; ``head``
    and ``head_tree``: HEAD's commit and tree (``None`` on an unborn branch)."""

    root: Path
    git_dir: Path
    common_dir: Path
    head: str | None = None
    head_tree: str | None = None


_WHERE = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"]


def locate_checkout(path: Path) -> Checkout | None:
    """The checkout ``path`` is the top folder of (or lies in), with its HEAD (one
    ``rev-parse``); ``None`` when it is not in one (no repository, a bare repository, a git
    directory)."""
    if not path.is_dir():
        return None
    code, out = try_git(path, [*_WHERE, "HEAD^{commit}", "HEAD^{tree}"])
    if code != 0:  # an unborn HEAD fails the whole query: ask for the folders alone
        code, out = try_git(path, _WHERE)
    parts = out.decode("utf-8", "surrogateescape").split("\n")
    if code != 0 or len(parts) < 3 or not parts[0]:
        return None
    root, git_dir, common = (Path(os.path.realpath(p)) for p in parts[:3])
    head, tree = (parts[3], parts[4]) if len(parts) > 4 and parts[4] else (None, None)
    return Checkout(root=root, git_dir=git_dir, common_dir=common, head=head, head_tree=tree)


def has_changes(checkout: Checkout, env: Mapping[str, str]) -> bool:
    """Whether the checkout's index or tracked files differ from HEAD (staged, unstaged or
    unmerged; untracked files are not looked at). ``env``: the filters switched off."""
    for cached in ([], ["--cached"]):
        args = ["diff-index", "--quiet", *cached, "--no-ext-diff", "HEAD", "--"]
        code, _ = try_git(checkout.root, args, env_extra=env)
        if code != 0:
            return True
    return False


def rev(root: Path, spec: str) -> str | None:
    """The object id ``spec`` names, or ``None``."""
    code, out = try_git(root, ["rev-parse", "--verify", "-q", "--end-of-options", spec])
    return out.decode("ascii", "replace").strip() if code == 0 and out.strip() else None


def patched_tree(root: Path, start_tree: str, patch: bytes, *, three_way: bool) -> str | None:
    """The tree ``patch`` makes of ``start_tree`` (built in a private index; the checkout's
    index and files are not read or written), or ``None`` when it does not apply — with
    ``three_way``, also when the three-way merge leaves a conflict."""
    with tempfile.TemporaryDirectory(prefix="factory-apply-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        run_git(root, ["read-tree", start_tree], env_extra=env, what="git read-tree")
        if patch:
            patch_file = os.path.join(tmp, "patch")
            with open(patch_file, "wb") as fh:
                fh.write(patch)
            how = ["--3way"] if three_way else []
            args = ["apply", "--cached", "--binary", "--whitespace=nowarn", *how, patch_file]
            if try_git(root, args, env_extra=env)[0] != 0:
                return None
        code, out = try_git(root, ["write-tree"], env_extra=env)  # fails on a conflict
    return out.decode("ascii").strip() if code == 0 else None


def no_filters(checkout: Checkout) -> dict[str, str]:
    """The environment that switches every filter driver of the checkout off."""
    return read_config(checkout.root).no_filters_env()


def stage(checkout: Checkout, tree: str, env: Mapping[str, str]) -> None:
    """Move the checkout's index and files from HEAD's tree to ``tree`` (``env``: every
    filter off, :func:`no_filters`; git's own end-of-line settings of the checkout apply to
    the files it writes).

    Raises:
        GitFailure: git refused (e.g. a local change it would overwrite).
    """
    run_git(
        checkout.root,
        [*NO_HOOKS, "read-tree", "-m", "-u", "HEAD", tree],
        env_extra=env,
        what="git read-tree -m -u",
    )


def index_tree(checkout: Checkout) -> str | None:
    """The tree the checkout's real index holds, written from a private copy (the real
    index is not rewritten); ``None`` when it holds none (e.g. unmerged entries)."""
    real = os.fspath(checkout.git_dir / "index")
    if not os.path.isfile(real):
        return None
    with tempfile.TemporaryDirectory(prefix="factory-apply-") as tmp:
        copy = os.path.join(tmp, "index")
        private_index_copy(real, copy)
        code, tree = try_git(checkout.root, ["write-tree"], env_extra={"GIT_INDEX_FILE": copy})
    return tree.decode("ascii").strip() if code == 0 else None


def identity_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's commit identity variables, the only ``GIT_*`` names passed on."""
    return {name: environ[name] for name in IDENTITY_VARS if environ.get(name)}


def has_identity(root: Path, environ: Mapping[str, str]) -> bool:
    """Whether git knows who the author and committer are (config or environment)."""
    env = identity_env(environ)
    return all(
        try_git(root, ["var", what], env_extra=env)[0] == 0
        for what in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    )


def commit(root: Path, tree: str, parent: str, message: str, environ: Mapping[str, str]) -> str:
    """A new commit of ``tree`` on ``parent`` (an object only; no ref moves)."""
    out = run_git(
        root,
        ["commit-tree", tree, "-p", parent, "-F", "-"],
        env_extra=identity_env(environ),
        stdin=message.encode("utf-8"),
        what="git commit-tree",
    )
    return out.decode("ascii").strip()


def move_head(root: Path, new: str, old: str, reason: str) -> None:
    """Point HEAD (and the branch it names) at ``new``, only if it is still ``old``."""
    run_git(
        root,
        [*NO_HOOKS, "update-ref", "-m", reason, "HEAD", new, old],
        what="git update-ref",
    )


def branch_name_valid(root: Path, name: str) -> bool:
    """Whether ``name`` may name a new branch (``check-ref-format``; not ``-x``, ``HEAD``)."""
    if not name or name.startswith("-") or name == "HEAD":
        return False
    return try_git(root, ["check-ref-format", f"refs/heads/{name}"])[0] == 0


def new_branch(root: Path, name: str, at: str) -> None:
    """Create ``refs/heads/NAME`` at ``at`` (only if it does not exist) and check it out
    (HEAD's tree is ``at``'s, so no file changes)."""
    run_git(
        root,
        [
            *NO_HOOKS,
            "update-ref",
            "-m",
            "factory receipt apply --branch",
            f"refs/heads/{name}",
            at,
            "",
        ],
        what="git update-ref",
    )
    run_git(
        root, [*NO_HOOKS, "symbolic-ref", "HEAD", f"refs/heads/{name}"], what="git symbolic-ref"
    )
