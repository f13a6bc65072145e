"""What the repository's own conversions would do to a candidate's bytes (issue 8 §3).

The candidate is built from raw bytes (:mod:`factory.gitio.snapshot`). A plain ``git add``
of the same files could store different blobs: end-of-line conversion (``core.autocrlf``,
the ``text``/``eol`` attributes), ``ident``, ``working-tree-encoding``, or a clean filter.
:func:`conversions_differ` says whether that is the case for at least one changed file, so
a publication can refuse a candidate whose reviewed bytes are not what git would commit.

It runs no program: a file whose ``filter`` attribute names a configured clean (or
process) command counts as differing without running it — its stored blob would be that
program's output; the built-in conversions are computed by ``git hash-object`` with every
filter switched off. :func:`attributes_files` records the ``.gitattributes`` of a tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from factory.gitio.config import RepoConfig
from factory.gitio.gitdata import c_quote, tree_entries
from factory.gitio.run import GitFailure, run_git, try_git

ATTRIBUTES = b".gitattributes"


def any_filtered(root: Path, cfg: RepoConfig, paths: Sequence[bytes]) -> bool:
    """Whether a ``filter`` attribute of any of ``paths`` names a configured driver."""
    active = cfg.active_filters()
    if not active:
        return False
    out = run_git(
        root,
        ["check-attr", "-z", "--stdin", "filter"],
        stdin=b"".join(p + b"\0" for p in paths),
        what="git check-attr",
    )
    fields = out.split(b"\0")
    values = [fields[i + 2] for i in range(0, len(fields) - 2, 3)]
    return any(v.decode("utf-8", "surrogateescape") in active for v in values)


def conversions_differ(root: Path, cfg: RepoConfig, files: Sequence[tuple[bytes, str]]) -> bool:
    """Whether git's conversions would store a blob other than the raw one for any of
    ``files`` (``(path, raw blob id)`` of added or modified regular files)."""
    if not files:
        return False
    paths = [p for p, _ in files]
    if any_filtered(root, cfg, paths):
        return True
    try:
        out = run_git(
            root,
            ["hash-object", "--stdin-paths"],
            env_extra=cfg.no_filters_env(),
            stdin=b"".join(c_quote(p) + b"\n" for p in paths),
            what="git hash-object",
        )
    except GitFailure:
        return True  # e.g. an encoding git cannot convert: it would not store these bytes
    return out.decode("ascii").split() != [oid for _, oid in files]


def attributes_files(root: Path, tree: str) -> list[tuple[str, str]]:
    """``(path, sha256)`` of every ``.gitattributes`` blob in ``tree``, in path order."""
    found = sorted(
        (path, e.oid)
        for path, e in tree_entries(root, tree).items()
        if path.rpartition(b"/")[2] == ATTRIBUTES and e.mode != "160000"
    )
    out: list[tuple[str, str]] = []
    for path, oid in found:
        code, data = try_git(root, ["cat-file", "blob", oid])
        if code != 0:
            raise GitFailure("git cat-file could not read a .gitattributes blob of the base")
        out.append((path.decode("utf-8", "backslashreplace"), hashlib.sha256(data).hexdigest()))
    return out
