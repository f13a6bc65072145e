"""Find the checkout that owns a folder: primary or linked, never trusting the folder itself.

``discover(path)`` asks git for the top folder and both git directories of the checkout
that contains ``path`` (which may be any folder inside it). Every path is made physical
(``realpath``), so a symlinked alias of the checkout names the same repository, and the
common git directory — shared by all linked worktrees — is what review authority is keyed
on.
"""

from __future__ import annotations

import os
from pathlib import Path

from factory.errors import Refused
from factory.gitio.run import try_git
from factory.gitio.worktree import Worktree


class NotARepository(Refused):
    """The folder is not inside a git checkout with a working tree (exit 2)."""


NOT_A_CHECKOUT = NotARepository.define(
    "not-a-git-checkout", "pass --cwd with a folder inside a git checkout", default=True
)


def discover(path: Path) -> Worktree:
    """The checkout containing ``path``.

    Raises:
        NotARepository: ``path`` is missing, not in a git checkout, or in a bare repository.
    """
    if not path.is_dir():
        raise NotARepository(f"{path} is not an existing folder")
    code, out = try_git(
        path,
        [
            "rev-parse",
            "--path-format=absolute",
            "--is-bare-repository",
            "--git-dir",
            "--git-common-dir",
            "--show-toplevel",
        ],
    )
    parts = out.decode("utf-8", "surrogateescape").split("\n")
    if code != 0 or len(parts) < 3:
        raise NotARepository(f"{path} is not inside a git checkout")
    if parts[0] == "true" or len(parts) < 4 or not parts[3]:
        raise NotARepository(f"{path} is in a bare repository or a git directory")
    return Worktree(
        root=Path(os.path.realpath(parts[3])),
        git_dir=Path(os.path.realpath(parts[1])),
        common_dir=Path(os.path.realpath(parts[2])),
    )
