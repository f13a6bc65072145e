"""The ``ordinal-path-bytes-sha256/1`` recipe (SPEC F-6), byte-identical to the reference.

1. Walk regular files under the root, skipping directories named ``.git`` or
   ``node_modules`` at any depth (a *file* with either name is an ordinary file).
2. One line per file: ``relative/path|byte-count|sha256-hex`` with ``/`` separators.
3. Sort by the path's UTF-16 code units (ordinal; not locale, not code points).
4. Join with LF, no trailing LF; the digest is the SHA-256 of the UTF-8 document.

Anything that is neither a regular file nor a directory is refused by name, never
skipped, and so is a name that is not valid UTF-8 or that contains LF (a line could then
not be parsed back). A ``|`` inside a name is fine: a line parses from the right.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from factory.errors import Refused

INVENTORY_FORMAT = "inventory-digest/1"
INVENTORY_RECIPE = "ordinal-path-bytes-sha256/1"
EXCLUDED_DIRECTORY_NAMES = frozenset({".git", "node_modules"})


class InventoryRefused(Refused):
    """The tree cannot be digested faithfully; nothing was written (exit 2)."""


_OUT_OF_ROOT = "replace it with a regular file or move it out of the root"
NAME_NOT_UTF8 = InventoryRefused.define(
    "name-not-utf8", "rename it (or name a path that is valid UTF-8)"
)
NAME_CONTAINS_LF = InventoryRefused.define(
    "name-contains-lf", "rename it (or name a path without LF)"
)
SYMLINK_REFUSED = InventoryRefused.define("symlink-refused", _OUT_OF_ROOT)
FIFO_REFUSED = InventoryRefused.define("fifo-refused", _OUT_OF_ROOT)
SOCKET_REFUSED = InventoryRefused.define("socket-refused", _OUT_OF_ROOT)
DEVICE_REFUSED = InventoryRefused.define("device-refused", _OUT_OF_ROOT)
NON_REGULAR_REFUSED = InventoryRefused.define("non-regular-refused", _OUT_OF_ROOT)
UNREADABLE = InventoryRefused.define("unreadable", "fix its permissions or move it out of the root")
CHANGED_DURING_WALK = InventoryRefused.define("changed-during-walk", "run again on a quiet tree")
ROOT_NOT_FOLDER = InventoryRefused.define("root-not-folder", "name an existing folder with --root")
MANIFEST_INSIDE_ROOT = InventoryRefused.define(
    "manifest-inside-root", "name a --manifest path outside the root"
)
MANIFEST_PARENT_NOT_FOLDER = InventoryRefused.define(
    "manifest-parent-not-folder", "choose another --manifest path"
)
MANIFEST_FOLDER_MISSING = InventoryRefused.define(
    "manifest-folder-missing", "create its folder first or choose another path"
)


@dataclass(frozen=True, slots=True)
class Row:
    """One file of the inventory: recipe path, size in bytes, SHA-256 hex of its bytes."""

    path: str
    size: int
    sha256: str

    def line(self) -> str:
        return line(self.path, self.size, self.sha256)


@dataclass(frozen=True, slots=True)
class InventoryResult:
    """The fixed point of a tree: file count, total bytes, the document's SHA-256 hex."""

    count: int
    total_bytes: int
    digest: str
    document: bytes


def ordinal_key(path: str) -> bytes:
    """Sort key equal to UTF-16 code-unit order (big-endian bytes compare unit by unit)."""
    return path.encode("utf-16-be", "surrogatepass")


def ordinal_order(paths: list[str]) -> list[int]:
    """Indexes of ``paths`` in UTF-16 code-unit order (pure).

    Python compares ``str`` by code point, which equals UTF-16 order as long as no path
    holds a character outside the BMP; only then is the (slower) UTF-16 key needed.
    """
    everything = "\n".join(paths)
    if everything.isascii() or max(everything, default="\0") <= "\uffff":
        return sorted(range(len(paths)), key=paths.__getitem__)
    keys = [ordinal_key(p) for p in paths]
    return sorted(range(len(paths)), key=keys.__getitem__)


def line(path: str, size: int, sha256_hex: str) -> str:
    """One manifest line ``path|bytes|sha256`` (parsed from the right, so ``|`` in a name
    is fine)."""
    return f"{path}|{size}|{sha256_hex}"


def manifest_document(rows: list[Row]) -> bytes:
    """The exact hashed document: rows in ordinal order, LF-joined, no trailing LF."""
    order = ordinal_order([r.path for r in rows])
    return "\n".join(rows[i].line() for i in order).encode("utf-8")


def inventory(rows: list[Row]) -> InventoryResult:
    """Digest a list of rows (pure; no I/O)."""
    document = manifest_document(rows)
    return InventoryResult(
        count=len(rows),
        total_bytes=sum(r.size for r in rows),
        digest=hashlib.sha256(document).hexdigest(),
        document=document,
    )
