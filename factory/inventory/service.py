"""Digest a tree on disk and optionally write its manifest outside it (SPEC F-6)."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from factory import fsio
from factory.inventory.hashing import hash_files
from factory.inventory.recipe import (
    INVENTORY_FORMAT,
    INVENTORY_RECIPE,
    InventoryRefused,
    ordinal_order,
)
from factory.inventory.walk import list_files, raise_first


@dataclass(frozen=True, slots=True)
class TreeDigest:
    """What ``factory digest`` reports; ``digest`` is bare hex as the reference prints it."""

    format: str
    recipe: str
    count: int
    total_bytes: int
    digest: str
    document: bytes


def check_root(root: Path) -> None:
    """Refuse a root that is missing or not a folder (a symlink to a folder is followed)."""
    try:
        st = os.stat(root)
    except OSError as exc:
        raise InventoryRefused(
            f"{root}: cannot be read as a folder ({exc.strerror})", code="root-not-folder"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise InventoryRefused(f"{root}: not a folder", code="root-not-folder")


def check_manifest(root: Path, manifest: Path) -> None:
    """Refuse a manifest inside the measured tree, by filesystem identity (F-6)."""
    if fsio.physically_inside(manifest, root):
        raise InventoryRefused(
            f"{manifest} is inside the tree it measures ({root}); a manifest there would "
            "change the digest it reports. Name a path outside the root.",
            code="manifest-inside-root",
        )


def digest_tree(
    root: Path, *, manifest: Path | None = None, workers: int | None = None
) -> TreeDigest:
    """Digest ``root``; with ``manifest``, also write the document plus LF there.

    Every check runs before anything is written: a refused tree leaves no manifest. The
    manifest path is judged before the tree is read.

    Args:
        root: the folder to measure (a symlink to a folder is followed: it *is* the root).
        manifest: optional output path, created exclusively (mode 0644).
        workers: hashing processes; default one per usable CPU (see ``hashing``).

    Raises:
        InventoryRefused: the root, an entry, a name or the manifest path is refused.
        OutputExists: the manifest path already exists.
    """
    check_root(root)
    if manifest is not None:
        check_manifest(root, manifest)
        if os.path.lexists(manifest):
            raise fsio.OutputExists(f"{manifest} already exists; choose a new path")
    rels, paths = list_files(root)
    order = ordinal_order(rels)
    hashed = hash_files([rels[i] for i in order], [paths[i] for i in order], workers=workers)
    raise_first(hashed.problems)
    document = "\n".join(hashed.lines).encode("utf-8")
    if manifest is not None:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        fsio.write_exclusive(manifest, document + b"\n", mode=0o644)
    return TreeDigest(
        format=INVENTORY_FORMAT,
        recipe=INVENTORY_RECIPE,
        count=len(rels),
        total_bytes=hashed.total_bytes,
        digest=hashlib.sha256(document).hexdigest(),
        document=document,
    )
