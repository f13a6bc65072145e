"""Digest a tree on disk and optionally write its manifest outside it (SPEC F-6)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from factory import fsio
from factory.inventory.recipe import (
    INVENTORY_FORMAT,
    INVENTORY_RECIPE,
    InventoryRefused,
    inventory,
)
from factory.inventory.walk import scan


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


def digest_tree(root: Path, *, manifest: Path | None = None) -> TreeDigest:
    """Digest ``root``; with ``manifest``, also write the document plus LF there.

    Every check runs before anything is written: a refused tree leaves no manifest.

    Raises:
        InventoryRefused: the root, an entry, a name or the manifest path is refused.
        OutputExists: the manifest path already exists.
    """
    check_root(root)
    if manifest is not None:
        check_manifest(root, manifest)
        if os.path.lexists(manifest):
            raise fsio.OutputExists(f"{manifest} already exists; choose a new path")
    result = inventory(scan(root))
    if manifest is not None:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        fsio.write_exclusive(manifest, result.document + b"\n", mode=0o644)
    return TreeDigest(
        format=INVENTORY_FORMAT,
        recipe=INVENTORY_RECIPE,
        count=result.count,
        total_bytes=result.total_bytes,
        digest=result.digest,
        document=result.document,
    )
