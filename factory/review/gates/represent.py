"""One candidate, two representations: the reviewed raw bytes and what git stores
(issue 23 §1).

A review binds the raw bytes of the checkout (:mod:`factory.gitio.snapshot` applies no
conversion). In a converting checkout — ``core.autocrlf``, the ``text``/``eol``
attributes, ``ident``, ``working-tree-encoding``, a clean filter — ``git add`` stores other
blobs for the same files, so the staged tree and every commit made from it differ from the
approved tree although nobody changed anything. Two answers, neither running a program
the repository names:

* :func:`staged_is_checkout`: the staged tree is git's own representation of the checkout
  when every path where it differs from the raw candidate is stat-clean in the index git
  is committing from (``git diff-files`` with every filter switched off reports nothing:
  git wrote that blob from these exact bytes and has not seen them change since). An
  entry git cannot vouch for this way (racy or edited) is re-hashed without filters and
  counts as changed — partial staging is still partial staging.
* :func:`compare`: whether a git tree is git's conversion of an approved raw tree, path by
  path: same paths and modes, and each differing blob equal to ``git hash-object --path=P
  --stdin`` of the raw blob with every filter switched off (git's built-in conversions
  only). A path whose ``filter`` attribute names a configured driver cannot be compared
  without running it: ``"filtered"``, which the gate answers with a terminal denial.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from factory.gitio.config import read_config
from factory.gitio.conversions import any_filtered
from factory.gitio.run import GitFailure, run_git, try_git

Sameness = Literal["same", "different", "filtered"]
#: ``compare`` bound to a checkout: (approved raw tree, git tree) → sameness.
Compare = Callable[[str, str], Sameness]
#: More differing paths than this are not compared blob by blob (a different candidate).
PATH_LIMIT = 64


def _differing(root: Path, a: str, b: str) -> list[tuple[str, str, str, str, bytes]] | None:
    """(old mode, new mode, old oid, new oid, path) per differing path; None when a path
    was added, deleted or changed type (no conversion does that)."""
    out = run_git(
        root,
        ["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff", "--no-textconv", a, b],
        what="git diff-tree",
    )
    fields = out.split(b"\0")
    rows = []
    for i in range(0, len(fields) - 1, 2):
        meta = fields[i].lstrip(b":").split(b" ")
        if len(meta) != 5 or meta[4] != b"M" or meta[0] != meta[1]:
            return None
        old_mode, new_mode, old, new = (m.decode("ascii") for m in meta[:4])
        rows.append((old_mode, new_mode, old, new, fields[i + 1]))
    return rows


def compare(root: Path, raw_tree: str, git_tree: str) -> Sameness:
    """Whether ``git_tree`` is what git stores for the raw tree ``raw_tree``."""
    if raw_tree == git_tree:
        return "same"
    rows = _differing(root, raw_tree, git_tree)
    if rows is None or len(rows) > PATH_LIMIT or any(r[0] == "160000" for r in rows):
        return "different"
    cfg = read_config(root)
    if any_filtered(root, cfg, [r[4] for r in rows]):
        return "filtered"
    env = cfg.no_filters_env()
    for _, _, raw_oid, git_oid, path in rows:
        code, data = try_git(root, ["cat-file", "blob", raw_oid])
        if code != 0:
            return "different"
        try:
            out = run_git(
                root,
                ["hash-object", f"--path={os.fsdecode(path)}", "--stdin"],
                stdin=data,
                env_extra=env,
                what="git hash-object",
            )
        except GitFailure:
            return "different"  # e.g. an encoding git cannot convert
        if out.decode("ascii", "replace").strip() != git_oid:
            return "different"
    return "same"


def comparer(root: Path) -> Compare:
    """:func:`compare` for one checkout, remembering each pair it answered."""
    seen: dict[tuple[str, str], Sameness] = {}

    def answer(raw_tree: str, git_tree: str) -> Sameness:
        key = (raw_tree, git_tree)
        if key not in seen:
            seen[key] = compare(root, raw_tree, git_tree)
        return seen[key]

    return answer


def staged_is_checkout(root: Path, index: Path, candidate: str, staged: str) -> bool:
    """Whether the staged tree is git's representation of the checkout whose raw tree is
    ``candidate`` (see the module docstring)."""
    rows = _differing(root, candidate, staged)
    if rows is None:
        return False
    env = {**read_config(root).no_filters_env(), "GIT_INDEX_FILE": os.fspath(index)}
    code, out = try_git(
        root, ["diff-files", "-z", "--name-only", "--no-ext-diff", "--no-textconv"], env_extra=env
    )
    if code != 0:
        return False
    modified = {p for p in out.split(b"\0") if p}
    return not any(r[4] in modified for r in rows)
