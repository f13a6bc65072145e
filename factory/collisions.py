"""Names that collide on case-insensitive or normalising file systems (issue 8 §6). Pure.

A tree may hold ``README.md`` beside ``readme.md``, or ``é`` written once precomposed
(U+00E9) and once decomposed (``e`` + U+0301): distinct for git and Linux, one name on
macOS (case-insensitive, normalisation-insensitive) and on Windows (case-insensitive), so
such a tree cannot be checked out there. Folders count too: ``Src/a`` and ``src/b`` collide
at ``Src``/``src``.

:func:`collision_groups` groups the names that share a folder (the exact same parent
path) and are equal after Unicode NFC normalisation followed by case folding; a folder's
collision is reported once, not again for every pair of files below it. A group is
``"nfc"`` when its names differ only by normalisation, else ``"case-fold"``. Paths that are
not UTF-8 are left out (they cannot be compared as text).
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

CollisionKind = Literal["case-fold", "nfc"]


@dataclass(frozen=True, slots=True)
class CollisionGroup:
    """Two or more paths (full, ``/``-separated, sorted) that would be one name."""

    kind: CollisionKind
    paths: tuple[str, ...]


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def collision_groups(paths: Iterable[bytes | str]) -> list[CollisionGroup]:
    """The collision groups among ``paths`` and all their folders, sorted by first path."""
    prefixes: set[str] = set()
    for raw in paths:
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            continue
        parts = text.split("/")
        for i in range(1, len(parts) + 1):
            prefixes.add("/".join(parts[:i]))
    buckets: dict[tuple[str, str], list[str]] = defaultdict(list)
    for prefix in prefixes:
        parent, _, name = prefix.rpartition("/")
        buckets[(parent, _fold(name))].append(prefix)
    groups = []
    for members in buckets.values():
        if len(members) > 1:
            names = {unicodedata.normalize("NFC", m.rpartition("/")[2]) for m in members}
            kind: CollisionKind = "nfc" if len(names) == 1 else "case-fold"
            groups.append(CollisionGroup(kind, tuple(sorted(members))))
    return sorted(groups, key=lambda g: g.paths)
