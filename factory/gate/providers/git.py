"""``git``: a ref's commit and tree, and optionally whether it descends from another ref.

Arguments: ``repo`` (a folder inside a repository), ``ref`` (any revision), ``ancestor_of``
(optional revision: ``is_ancestor`` tells whether ``ref`` is an ancestor of it). Git runs
read-only through :mod:`factory.gitio` (scrubbed environment, no repository programs).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from factory.gate.providers import Observed, operational
from factory.gitio.run import try_git


def _rev(repo: Path, rev: str, kind: str) -> str | None:
    if rev.startswith("-"):
        return None
    code, out = try_git(
        repo, ["rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{{kind}}}"]
    )
    text = out.decode("ascii", "replace").strip()
    return text if code == 0 and text else None


async def acquire(args: Mapping[str, Any]) -> Observed:
    repo = Path(args["repo"])
    if not repo.is_dir():
        return operational("provider-unavailable", "the repository folder does not exist")
    commit = _rev(repo, str(args["ref"]), "commit")
    if commit is None:
        return operational("provider-unavailable", "the ref does not name a commit here")
    tree = _rev(repo, commit, "tree")
    document: dict[str, Any] = {"commit": commit, "tree": tree}
    if "ancestor_of" in args:
        other = _rev(repo, str(args["ancestor_of"]), "commit")
        if other is None:
            return operational("provider-unavailable", "ancestor_of does not name a commit here")
        code, _ = try_git(repo, ["merge-base", "--is-ancestor", commit, other])
        if code not in (0, 1):
            return operational("provider-crashed", "git merge-base did not answer")
        document["is_ancestor"] = code == 0
    return Observed(document, scope_kind="commit", scope_value=commit)
