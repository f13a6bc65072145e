"""Apply a stored patch to its base tree and read back what it produces (issue 8 §3).

:func:`replay_patch` applies the patch bytes to the base tree in a private temporary index
(``git apply --cached --binary``: no worktree is read or written, no conversion or
program runs, whitespace is left as it is), writes the resulting tree, and returns it with
the mode and SHA-256 of every path that differs from the base — so a receipt's candidate
tree and per-file records can be checked against its own patch.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from factory.gitio.gitdata import diff_entries
from factory.gitio.run import run_git, try_git


@dataclass(frozen=True, slots=True)
class Replayed:
    """The tree a patch produced and, per changed path, ``(mode, sha256)`` (``None`` when
    the patch deletes the path)."""

    tree: str
    files: dict[bytes, tuple[str, str] | None]


def _contents_sha256(root: Path, oids: list[str]) -> dict[str, str]:
    out = run_git(
        root,
        ["cat-file", "--batch"],
        stdin=b"".join(o.encode() + b"\n" for o in oids),
        what="git cat-file --batch",
    )
    shas: dict[str, str] = {}
    pos = 0
    for oid in oids:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split(b" ")[2])
        data = out[header_end + 1 : header_end + 1 + size]
        shas[oid] = hashlib.sha256(data).hexdigest()
        pos = header_end + 1 + size + 1
    return shas


def replay_patch(root: Path, base_tree: str, patch: bytes) -> Replayed | None:
    """Apply ``patch`` to ``base_tree`` in the repository at ``root``; ``None`` when it
    does not apply.

    Raises:
        GitFailure: a git query other than the apply itself failed.
    """
    with tempfile.TemporaryDirectory(prefix="factory-replay-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        run_git(root, ["read-tree", base_tree], env_extra=env, what="git read-tree")
        if patch:
            with open(os.path.join(tmp, "patch"), "wb") as fh:
                fh.write(patch)
            code, _ = try_git(
                root,
                [
                    "apply",
                    "--cached",
                    "--binary",
                    "--whitespace=nowarn",
                    os.path.join(tmp, "patch"),
                ],
                env_extra=env,
            )
            if code != 0:
                return None
        tree = run_git(root, ["write-tree"], env_extra=env, what="git write-tree")
    tree_id = tree.decode("ascii").strip()
    changed = diff_entries(root, base_tree, tree_id)
    shas = _contents_sha256(root, sorted({oid for _, oid in changed.values() if oid}))
    files = {
        path: (mode, shas[oid]) if oid is not None else None
        for path, (mode, oid) in changed.items()
    }
    return Replayed(tree_id, files)
