"""Which git attributes could make a file's index blob differ from its raw bytes.

A path whose ``text``, ``crlf``, ``eol``, ``filter``, ``ident`` or ``working-tree-encoding``
attribute is set may be converted between the worktree and the index, so neither the
index's stat cache (:mod:`factory.gitio.indexcache`) nor the gates' fast candidate
(:mod:`factory.review.gates.fastpath`) may vouch for it. Attributes come from
``.gitattributes`` files in the tree and from files outside it
(:func:`outside_attribute_files`); ``git check-attr`` says which apply, and runs no program.
"""

from __future__ import annotations

import os
from pathlib import Path

from factory.gitio.config import RepoConfig
from factory.gitio.run import run_git

CONVERSION_ATTRIBUTES = ("text", "eol", "crlf", "ident", "filter", "working-tree-encoding")
FALSE_WORDS = ("false", "no", "off", "0")  # git's spellings of a false boolean
SYSTEM_ATTRIBUTES = ("/etc/gitattributes", "/usr/etc/gitattributes", "/usr/local/etc/gitattributes")


def git_path(root: Path, name: str) -> Path:
    """``git rev-parse --git-path NAME``, absolute."""
    out = run_git(root, ["rev-parse", "--path-format=absolute", "--git-path", name])
    return Path(os.fsdecode(out.strip()))


def outside_attribute_files(info_attributes: str, attributes_file: str | None) -> list[str]:
    """The attributes files git reads from outside the worktree: the repository's
    ``info/attributes``, the XDG one, the system ones and ``core.attributesFile``."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", "/"), ".config")
    candidates = [info_attributes, os.path.join(xdg, "git", "attributes"), *SYSTEM_ATTRIBUTES]
    if attributes_file:
        candidates.append(os.path.expanduser(attributes_file))
    return candidates


def attribute_files_may_apply(root: Path, paths: list[bytes], attributes_file: str | None) -> bool:
    """Whether any attributes file may apply to ``paths`` (one of them is a
    ``.gitattributes``, or a file outside the worktree exists)."""
    if any(p == b".gitattributes" or p.endswith(b"/.gitattributes") for p in paths):
        return True
    info = str(git_path(root, "info/attributes"))
    return any(os.path.exists(c) for c in outside_attribute_files(info, attributes_file))


def converting_paths(root: Path, paths: list[bytes]) -> set[bytes]:
    """The ``paths`` whose attributes could make git convert their bytes (any of
    :data:`CONVERSION_ATTRIBUTES` set to something but ``unspecified`` or ``unset``;
    ``git check-attr`` runs no program)."""
    if not paths:
        return set()
    out = run_git(
        root,
        ["check-attr", "-z", "--stdin", *CONVERSION_ATTRIBUTES],
        stdin=b"".join(p + b"\0" for p in paths),
        what="git check-attr",
    )
    fields = out.split(b"\0")
    return {
        fields[i]
        for i in range(0, len(fields) - 2, 3)
        if fields[i + 2] not in (b"unspecified", b"unset")
    }


def autocrlf_converts(cfg: RepoConfig) -> bool:
    """Whether ``core.autocrlf`` may convert text files between the worktree and the
    index: anything but unset or a false boolean (``true``, ``input``, and a value git
    itself would refuse all count as converting)."""
    return (cfg.last("core.autocrlf") or "false").lower() not in FALSE_WORDS


def index_converting(root: Path, cfg: RepoConfig, paths: list[bytes]) -> set[bytes] | None:
    """The one "trust git's index" predicate on content: which of ``paths`` may have an
    index blob that is not their raw bytes. ``None`` when every path may
    (:func:`autocrlf_converts`); else the paths with a conversion attribute set, asked of
    ``git check-attr`` only when an attributes file may apply (``paths`` must then hold
    every ``.gitattributes`` the worktree has, as an index or untracked listing does).

    The index's stat cache (:mod:`factory.gitio.indexcache`) trusts no entry in that set,
    and the gates' fast candidate (:mod:`factory.review.gates.fastpath`) answers only when
    it is empty."""
    if autocrlf_converts(cfg):
        return None
    if paths and attribute_files_may_apply(root, paths, cfg.last("core.attributesfile")):
        return converting_paths(root, paths)
    return set()
