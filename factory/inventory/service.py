"""Digest a tree on disk and optionally write its manifest outside it (SPEC F-6)."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from factory import fsio
from factory.collisions import CollisionGroup, collision_groups
from factory.errors import Failure
from factory.inventory import recipe as r
from factory.inventory.hashing import hash_files
from factory.inventory.recipe import (
    INVENTORY_FORMAT,
    INVENTORY_RECIPE,
    ordinal_order,
)
from factory.inventory.walk import list_files, raise_first, shown


class ManifestWriteFailed(Failure):
    """The tree was digested but the manifest could not be written (exit 4)."""


MANIFEST_WRITE_FAILED = ManifestWriteFailed.define(
    "manifest-write-failed",
    "free space or fix permissions there, or choose another --manifest path",
    default=True,
)


@dataclass(frozen=True, slots=True)
class TreeDigest:
    """What ``factory digest`` reports; ``digest`` is bare hex as the reference prints it.

    ``collisions``: case-fold/NFC collision groups among the file paths (and their
    folders); reported beside the digest, never part of the hashed document.
    """

    format: str
    recipe: str
    count: int
    total_bytes: int
    digest: str
    document: bytes
    collisions: tuple[CollisionGroup, ...] = ()


def printable(path: Path, what: str) -> str:
    """``path`` made absolute for the output lines; refused if a line could not carry it.

    Raises:
        InventoryRefused: the path is not valid UTF-8 or contains LF.
    """
    text = os.path.abspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise r.NAME_NOT_UTF8(
            f"{shown(text)}: the {what} path is not valid UTF-8, so the output could not name it"
        ) from None
    if "\n" in text:
        raise r.NAME_CONTAINS_LF(
            f"{shown(text)}: the {what} path contains LF, which an output line cannot hold"
        )
    return text


def check_root(root: Path) -> None:
    """Refuse a root that is missing or not a folder (a symlink to a folder is followed)."""
    try:
        st = os.stat(root)
    except OSError as exc:
        raise r.ROOT_NOT_FOLDER(
            f"{shown(os.fspath(root))}: cannot be read as a folder ({exc.strerror})"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise r.ROOT_NOT_FOLDER(f"{shown(os.fspath(root))}: not a folder")


def check_manifest(root: Path, manifest: Path) -> None:
    """Refuse a manifest inside the measured tree (by filesystem identity, F-6), one that
    exists, one whose nearest existing ancestor is not a folder, or one whose folder is
    missing (it is never created).

    Raises:
        InventoryRefused: ``manifest-inside-root``, ``manifest-parent-not-folder`` or
            ``manifest-folder-missing`` (the folder that would hold it does not exist).
        OutputExists: the path exists (a dangling symlink included).
    """
    if fsio.physically_inside(manifest, root):
        raise r.MANIFEST_INSIDE_ROOT(
            f"{shown(os.fspath(manifest))} is inside the tree it measures "
            f"({shown(os.fspath(root))}); a manifest there would change the digest it reports"
        )
    if os.path.lexists(manifest):
        raise fsio.OUTPUT_EXISTS(f"{shown(os.fspath(manifest))} already exists")
    existing, _ = fsio.nearest_existing(manifest)
    if not existing.is_dir():
        raise r.MANIFEST_PARENT_NOT_FOLDER(
            f"{shown(os.fspath(manifest))}: {shown(os.fspath(existing))} is not a folder, so "
            "the manifest cannot be created there"
        )
    if not os.path.isdir(os.path.dirname(os.fspath(manifest)) or "."):
        # Refused, not created: a mistyped path would otherwise leave new folders behind,
        # and smoke and agent refuse a missing report folder the same way.
        raise r.MANIFEST_FOLDER_MISSING(f"{shown(os.fspath(manifest))}: its folder does not exist")


def digest_tree(
    root: Path, *, manifest: Path | None = None, workers: int | None = None
) -> TreeDigest:
    """Digest ``root``; with ``manifest``, also write the document plus LF there.

    Every check runs before anything is written: a refused tree leaves no manifest. The
    manifest path is judged before the tree is read.

    Args:
        root: the folder to measure (a symlink to a folder is followed: it *is* the root).
        manifest: optional output path, created exclusively (mode 0644).
        workers: hashing processes; default one per usable CPU (see ``hashing``). Called
            from a thread (e.g. ``trio.to_thread.run_sync``) it uses threads instead of
            forking, since a fork could copy another thread's held lock.

    Raises:
        InventoryRefused: the root, an entry, a name or the manifest path is refused.
        OutputExists: the manifest path already exists.
        ManifestWriteFailed: writing the manifest failed after the digest (exit 4).
    """
    check_root(root)
    if manifest is not None:
        check_manifest(root, manifest)
    rels = list_files(root)
    ordered = [rels[i] for i in ordinal_order(rels)]
    hashed = hash_files(ordered, root, workers=workers)
    raise_first(hashed.problems)
    document = hashed.document()
    if manifest is not None:
        try:
            fsio.write_exclusive(manifest, document + b"\n", mode=0o644)
        except fsio.OutputExists:
            raise  # created by someone else since the check: still nothing of ours there
        except OSError as exc:
            raise MANIFEST_WRITE_FAILED(
                f"{shown(os.fspath(manifest))}: the manifest could not be written "
                f"({exc.strerror}); the digest was {hashlib.sha256(document).hexdigest()}"
            ) from None
    return TreeDigest(
        format=INVENTORY_FORMAT,
        recipe=INVENTORY_RECIPE,
        count=len(rels),
        total_bytes=hashed.total_bytes,
        digest=hashlib.sha256(document).hexdigest(),
        document=document,
        collisions=tuple(collision_groups(rels)),
    )
