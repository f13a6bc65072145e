"""Content-addressed evidence outside the candidate (SPEC A-7).

Each bounded output is written once as ``<role>-<sha256 hex>`` (mode 0600, ``O_EXCL``)
into the run's own evidence folder, then read back and checked for size and digest before
the receipt refers to it. The receipt binds path, size, SHA-256, media type and the policy
label ``local-sensitive-content-addressed``; the bytes themselves never enter the receipt.

A provider's stdout and stderr are spooled into this folder while the CLI runs
(``<role>.spool``, see :class:`~factory.provider_api.Spool`); :meth:`EvidenceStore.adopt`
then links the spool file under its content-addressed name — no copy, no memory — and
checks it by re-hashing. A stream longer than its cap is kept as captured and marked
``truncated`` with its true length (``stream_bytes``).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from factory.agent.receipt import EVIDENCE_POLICY, EvidenceRef
from factory.documents.canonical import sha256_hex
from factory.errors import IntegrityFailure
from factory.filehash import digest_file
from factory.fsio import OutputExists, claim_dir, fsync_dir, write_exclusive
from factory.proc import Captured

TEXT = "text/plain; charset=utf-8"
JSONL = "application/x-ndjson"
JSON = "application/json"
PATCH = "text/x-diff"
STATUS = "application/x-git-status-porcelain-v2-z"
PATHS = "application/x-nul-terminated-paths"

_ROLE = re.compile(r"^[a-z][a-z0-9-]*$")


class EvidenceFailure(IntegrityFailure):
    """Evidence could not be stored or did not read back as written (exit 4)."""


EVIDENCE_STORE_FAILED = EvidenceFailure.define(
    "evidence-replay-failed", "check free space, permissions and the disk of the evidence folder"
)


def read_nofollow(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file, refusing symlinks and non-regular entries."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if limit is not None and total > limit:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


class EvidenceStore:
    """The run's evidence folder. :meth:`claim` creates it (0700, must not exist)."""

    def __init__(self, folder: Path, receipt_dir: Path) -> None:
        self.folder = folder
        self._receipt_dir = receipt_dir

    def claim(self) -> None:
        """Create the folder with a non-recursive ``mkdir`` (``OutputExists`` if taken)."""
        claim_dir(self.folder)
        fsync_dir(self.folder.parent)

    def _shown_path(self, path: Path) -> str:
        try:
            return os.fspath(path.relative_to(self._receipt_dir))
        except ValueError:
            return os.fspath(path)

    def put(self, role: str, data: bytes, media_type: str) -> EvidenceRef:
        """Store ``data`` as ``<role>-<sha256>`` and return its verified reference.

        Raises:
            EvidenceFailure: the file could not be created, or read back differently.
        """
        if not _ROLE.fullmatch(role):
            raise ValueError(f"evidence role must be kebab-case: {role!r}")
        sha = sha256_hex(data)
        path = self.folder / f"{role}-{sha}"
        try:
            write_exclusive(path, data, mode=0o600)
            back = digest_file(path)
        except (OSError, OutputExists) as exc:
            raise EVIDENCE_STORE_FAILED("evidence could not be stored") from exc
        if back != (len(data), sha):
            raise EVIDENCE_STORE_FAILED("evidence did not read back as written")
        return self._ref(role, path, len(data), sha, media_type)

    def adopt(self, role: str, captured: Captured, media_type: str) -> EvidenceRef:
        """Store a captured stream as ``<role>-<sha256>``: a spooled one by linking its
        spool file under that name (then removing the spool name), an in-memory one as
        :meth:`put` does. Truncation is recorded with the stream's true length.

        Raises:
            EvidenceFailure: the file could not be linked, or does not re-hash as captured.
        """
        if captured.spool is None:
            ref = self.put(role, captured.data, media_type)
        else:
            if not _ROLE.fullmatch(role):
                raise ValueError(f"evidence role must be kebab-case: {role!r}")
            path = self.folder / f"{role}-{captured.sha256}"
            try:
                os.link(captured.spool, path, follow_symlinks=False)
                os.unlink(captured.spool)
                fsync_dir(self.folder)
                size, sha = digest_file(path)
            except OSError as exc:
                raise EVIDENCE_STORE_FAILED("a provider's output could not be stored") from exc
            if (size, sha) != (captured.kept_bytes, captured.sha256):
                raise EVIDENCE_STORE_FAILED("evidence did not read back as captured")
            ref = self._ref(role, path, size, sha, media_type)
        total = captured.total_bytes if captured.truncated else None
        return ref.model_copy(update={"truncated": captured.truncated, "stream_bytes": total})

    def _ref(self, role: str, path: Path, size: int, sha: str, media_type: str) -> EvidenceRef:
        return EvidenceRef(
            role=role,
            path=self._shown_path(path),
            bytes=size,
            sha256=sha,
            media_type=media_type,
            policy=EVIDENCE_POLICY,
        )


def resolve_evidence_path(ref: EvidenceRef, receipt_path: Path) -> Path:
    """Where a receipt's evidence reference points (relative to the receipt's folder)."""
    p = Path(ref.path)
    return p if p.is_absolute() else receipt_path.parent / p
