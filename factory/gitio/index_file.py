"""Serialise a git index file (format version 2) from entries and their stat data.

The factory writes the index of a worktree it creates itself (``factory.gitio.create``):
no git command can fill an index with stat data without hashing the files again through
the repository's clean filters (``update-index --refresh`` does), and those filters are
repository-configured programs we never run. The format is git's
``Documentation/gitformat-index.txt``: a ``DIRC`` header, the entries sorted by path bytes,
each padded with NULs to a multiple of eight bytes, and a trailer that is the hash of
everything before it, with the repository's object hash (SHA-1 or SHA-256).

Pure: bytes in, bytes out. Stat values are truncated to 32 bits, as git stores them.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass

_HEADER = struct.Struct(">4sII")
_STAT = struct.Struct(">10I")
_NAME_MASK = 0x0FFF
_U32 = 0xFFFFFFFF
HASHES = {"sha1": 20, "sha256": 32}


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One stage-0 entry: the path as bytes, git's mode, the object id, the file's stat."""

    path: bytes
    mode: int  # 0o100644 | 0o100755 | 0o120000 | 0o160000
    oid: str  # hex
    stat: os.stat_result | None  # None: zeroed stat data (git re-checks such an entry)


def _stat_fields(mode: int, st: os.stat_result | None) -> tuple[int, ...]:
    if st is None:
        return (0, 0, 0, 0, 0, 0, mode, 0, 0, 0)
    return tuple(
        v & _U32
        for v in (
            st.st_ctime_ns // 1_000_000_000,
            st.st_ctime_ns % 1_000_000_000,
            st.st_mtime_ns // 1_000_000_000,
            st.st_mtime_ns % 1_000_000_000,
            st.st_dev,
            st.st_ino,
            mode,
            st.st_uid,
            st.st_gid,
            st.st_size,
        )
    )


def index_bytes(entries: list[IndexEntry], object_format: str = "sha1") -> bytes:
    """The exact bytes of a version-2 index holding ``entries`` (any order; sorted here).

    Raises:
        ValueError: an unknown object format, an object id of the wrong length, or the same
            path twice.
    """
    size = HASHES.get(object_format)
    if size is None:
        raise ValueError(f"unknown object format {object_format!r}")
    ordered = sorted(entries, key=lambda e: e.path)
    parts = [_HEADER.pack(b"DIRC", 2, len(ordered))]
    previous: bytes | None = None
    for entry in ordered:
        if entry.path == previous:
            raise ValueError("the same path appears twice")
        previous = entry.path
        oid = bytes.fromhex(entry.oid)
        if len(oid) != size:
            raise ValueError("object id length does not match the object format")
        flags = min(len(entry.path), _NAME_MASK)
        body = _STAT.pack(*_stat_fields(entry.mode, entry.stat)) + oid
        body += struct.pack(">H", flags) + entry.path
        parts.append(body + b"\0" * (8 - len(body) % 8))
    data = b"".join(parts)
    digest = hashlib.sha1(data, usedforsecurity=False) if size == 20 else hashlib.sha256(data)
    return data + digest.digest()
