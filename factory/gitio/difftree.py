"""What differs between two trees, read from ``git diff-tree`` (one parser for the project).

Two shapes are asked for:

* :func:`tree_changes`: every changed path with its old and new mode and its ``--numstat``
  line counts (``diff-tree -z --raw --numstat``). The review target
  (:mod:`factory.review.snapshot`) and the decision gate's ``candidate-risk`` evidence
  source (:mod:`factory.gate.providers.risk`) classify the same records, so the two can
  never count a candidate differently.
* :func:`changed_names`: the sorted changed paths alone (``--name-only``), for the review
  checks and the receipt's representation.

Both run through :mod:`factory.gitio.run` (argv only, scrubbed environment) with
``--no-renames --no-ext-diff --no-textconv``: git's own rename guesses, external diff
programs and text conversions never shape the answer. Paths stay the bytes git printed;
callers choose how to decode them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from factory.gitio.run import run_git

DIFF_FLAGS = ("-r", "--no-renames", "--no-ext-diff", "--no-textconv", "--full-index")


@dataclass(frozen=True, slots=True)
class TreeChange:
    """One path that differs between two trees: modes as git prints them (``000000`` for
    absent), line counts (zero for a binary file, which ``binary`` marks)."""

    path: bytes
    old_mode: str
    new_mode: str
    added: int
    deleted: int
    binary: bool


def parse_raw_numstat(out: bytes) -> list[TreeChange]:
    """``diff-tree -z --raw --numstat`` output: the raw records (``:meta NUL path NUL``)
    first, in git's order, then the numstat records (``added TAB deleted TAB path NUL``,
    ``-`` for a binary file). A raw record without a numstat one counts zero lines."""
    fields = out.split(b"\0")
    raw: list[tuple[str, str, bytes]] = []
    counts: dict[bytes, tuple[int, int, bool]] = {}
    i = 0
    while i < len(fields):
        record = fields[i]
        if record.startswith(b":"):
            meta = record[1:].split(b" ")
            raw.append((meta[0].decode("ascii"), meta[1].decode("ascii"), fields[i + 1]))
            i += 2
            continue
        if record:
            plus, minus, path = record.split(b"\t", 2)
            binary = plus == b"-"
            counts[path] = (0 if binary else int(plus), 0 if binary else int(minus), binary)
        i += 1
    changes = []
    for old_mode, new_mode, path in raw:
        added, deleted, binary = counts.get(path, (0, 0, False))
        changes.append(TreeChange(path, old_mode, new_mode, added, deleted, binary))
    return changes


def tree_changes(root: Path, base: str, cand: str) -> list[TreeChange]:
    """Every path that differs between trees ``base`` and ``cand``, with modes and counts
    (empty, without running git, when the trees are the same object)."""
    if base == cand:
        return []
    out = run_git(
        root,
        ["diff-tree", *DIFF_FLAGS, "-z", "--raw", "--numstat", base, cand],
        what="git diff-tree",
    )
    return parse_raw_numstat(out)


def changed_names(root: Path, base: str, cand: str) -> tuple[str, ...]:
    """The sorted paths that differ between two trees (``surrogateescape`` for bytes that
    are not UTF-8)."""
    if base == cand:
        return ()
    out = run_git(
        root,
        ["diff-tree", *DIFF_FLAGS, "-z", "--name-only", base, cand, "--"],
        what="git diff-tree",
    )
    return tuple(sorted(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p))
