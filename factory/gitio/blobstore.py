"""The blobs of a snapshot's changed files, written without a filter (issue 8 §3).

Split from :mod:`factory.gitio.snapshot`, which decides what changed; this module only
stores the bytes: ``hash-object -w --no-filters`` for a few files, one pack by ``git
fast-import`` (which runs no filter either) for many. Either way the ids git reports must
be the ids the snapshot computed from the bytes it read.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from factory.gitio import gitdata
from factory.gitio.rawfs import CHANGED_DURING_SNAPSHOT
from factory.gitio.run import run_git

if TYPE_CHECKING:
    from factory.gitio.snapshot import Change

#: From this many blobs on (git's own ``transfer.unpackLimit`` default) they are written as
#: one pack by ``git fast-import`` instead of one loose object file each, while their bytes
#: fit in memory: 5,000 loose objects cost ~1 s of system time, the pack ~0.3 s.
PACK_FROM_BLOBS = 100
PACK_BYTES_LIMIT = 64 << 20


def write_blobs(root: Path, changes: Iterable[Change]) -> None:
    """Store the raw bytes of every changed, not deleted, file as a blob; the ids git
    computed must be the ids the snapshot hashed, else something still writes."""
    files = [c for c in changes if c.state != "deleted"]
    if not files:
        return
    if len(files) >= PACK_FROM_BLOBS and sum(c.size or 0 for c in files) <= PACK_BYTES_LIMIT:
        written = pack_blobs(root, files)
    else:
        out = run_git(
            root,
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            stdin=b"".join(gitdata.c_quote(c.path) + b"\n" for c in files),
            what="git hash-object",
        )
        written = out.decode("ascii").split()
    if written != [c.oid for c in files]:
        raise CHANGED_DURING_SNAPSHOT("a file changed while factory stored it")


def pack_blobs(root: Path, files: list[Change]) -> list[str]:
    """Write the files' raw bytes (no filters: fast-import runs none) as one pack; return
    the ids git computed, in order (objects already present are not written again)."""
    stream = bytearray()
    for i, c in enumerate(files, 1):
        try:
            data = read_raw(root, c.path, (c.size or 0) + 1)
        except OSError:  # gone, or a symlink now: not what was hashed
            raise CHANGED_DURING_SNAPSHOT("a file changed while factory stored it") from None
        stream += b"blob\nmark :%d\ndata %d\n" % (i, len(data))
        stream += data
        stream += b"\n"
    stream += b"done\n"
    with tempfile.TemporaryDirectory(prefix="factory-blobs-") as tmp:
        marks = os.path.join(tmp, "marks")
        run_git(
            root,
            ["fast-import", "--quiet", "--done", f"--export-marks={marks}"],
            stdin=bytes(stream),
            what="git fast-import",
        )
        with open(marks, "rb") as fh:
            ids = dict(line.split() for line in fh.read().splitlines())
    return [ids.get(b":%d" % i, b"").decode("ascii") for i in range(1, len(files) + 1)]


def read_raw(root: Path, path: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes of regular file ``path`` (no symlink followed at the end)."""
    fd = os.open(os.path.join(os.fsencode(root), path), os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
