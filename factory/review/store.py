"""The review store under the git common dir (SPEC R): one lock, one record per lineage,
replaced only by compare-and-swap (shared by every linked worktree of the repository).

Layout::

    <git-common-dir>/factory/review/v1/
    ├── LOCK                                   flock + owner metadata (never deleted)
    └── <lineage-id>/
        ├── review-state.json                  {schema, revision, state}
        ├── review-receipt.json                terminal only, derived from the state
        ├── evidence/<role>-<sha256>           raw bytes the state binds by SHA-256
        └── incidents/<lens>-<sha256>.json     preserved lens payloads (replay only)

``revision`` is ``digest("factory.review-state/1", state)`` over the canonical JSON of the
stored state value. :meth:`ReviewStore.replace` writes only if the current revision is the
caller's expected one (an identical state is an idempotent success), under the lock, after
the successor passed every invariant and the successor rules. Loading re-validates
everything and fails closed *naming the lineage*; :meth:`ReviewStore.scan` reports a bad
record as bad and carries on with the others. A new lineage appears by renaming a complete
temporary folder into place, so a crash never leaves a lineage folder without its record.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from factory.documents.canonical import sha256_hex
from factory.fsio import OutputExists, atomic_replace, fsync_dir, write_exclusive
from factory.review.errors import (
    LINEAGE_SYMLINK,
    LINEAGE_UNKNOWN,
    STORE_SYMLINK,
    ReviewCasConflict,
    ReviewRecordCorrupt,
    ReviewRefused,
    ReviewStoreInvalid,
)
from factory.review.invariants import state_problems
from factory.review.lock import StoreLock
from factory.review.names import RECEIPTED, valid_lineage
from factory.review.receipt import RECEIPT_FILE, derive_receipt, receipt_bytes, receipt_problem
from factory.review.record import (
    RECORD_LIMIT,
    corrupt_record,
    decode_record,
    read_nofollow,
    record_bytes,
    revision_of,
)
from factory.review.state import ReviewState
from factory.review.successor import successor_problem

STATE_FILE = "review-state.json"
EVIDENCE = "evidence"
STORE_PARTS = ("factory", "review", "v1")
_REVISION_PREFIX = b'{"revision":"sha256:'
_REV_END = len(_REVISION_PREFIX) + 64


#: Crash-injection seam for tests: called with a write point's name before and after
#: every durable write (``create``, ``replace``, ``receipt``, ``blob``).
def _no_hook(point: str) -> None:
    return None


write_hook: Callable[[str], None] = _no_hook

__all__ = [
    "STATE_FILE",
    "STORE_PARTS",
    "Committed",
    "Corrupt",
    "Loaded",
    "ReviewStore",
    "decode_record",
    "record_bytes",
    "revision_of",
    "write_hook",
]


@dataclass(frozen=True, slots=True)
class Loaded:
    """A valid lineage: its state, revision, and whether its receipt file is in place."""

    lineage_id: str
    revision: str
    state: ReviewState
    receipt: Literal["ok", "missing", "none"]


@dataclass(frozen=True, slots=True)
class Corrupt:
    """A lineage whose record fails validation (kept as it is, never repaired in place)."""

    lineage_id: str
    error: ReviewRecordCorrupt


@dataclass(frozen=True, slots=True)
class Committed:
    """The outcome of a replace: the stored lineage, and whether bytes were written."""

    loaded: Loaded
    written: bool


class ReviewStore:
    """The store of one repository (``<common-dir>/factory/review/v1``)."""

    def __init__(self, common_dir: Path, *, lock_wait_s: float | None = None) -> None:
        self.common_dir = common_dir
        self.root = common_dir.joinpath(*STORE_PARTS)
        self._lock_wait_s = lock_wait_s
        self._held: StoreLock | None = None

    # -- locking -----------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self, command: str) -> Iterator[None]:
        """Hold the store lock (re-entrant within this object)."""
        if self._held is not None:
            yield
            return
        self.check_root()
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        kwargs: dict[str, Any] = {"command": command}
        if self._lock_wait_s is not None:
            kwargs["wait_s"] = self._lock_wait_s
        with StoreLock(self.root / "LOCK", **kwargs) as held:
            self._held = held
            try:
                yield
            finally:
                self._held = None

    # -- layout ------------------------------------------------------------------------
    def check_root(self) -> None:
        """The store's folders under the common dir are real folders, never links.

        Raises:
            ReviewStoreInvalid: ``review-store-symlink``, naming the link.
        """
        path = self.common_dir
        for part in STORE_PARTS:
            path = path / part
            if os.path.islink(path):
                aside = shlex.quote(f"{path}.link-aside")
                raise ReviewStoreInvalid(
                    f"the review store path {path} is a symbolic link; it is never followed",
                    code=STORE_SYMLINK,
                    next=(f"mv {shlex.quote(str(path))} {aside}", "factory review status"),
                )

    def lineage_dir(self, lineage_id: str, *, evidence: bool = False) -> Path:
        """The lineage's folder (or its ``evidence/``), refusing a link anywhere on the way.

        Raises:
            ReviewRecordCorrupt: ``review-lineage-symlink``, naming the lineage.
        """
        folder = self.folder(lineage_id)
        for path, what in ((folder, "folder"), (folder / EVIDENCE, f"{EVIDENCE}/ folder")):
            if os.path.islink(path):
                raise ReviewRecordCorrupt(
                    f"review lineage {lineage_id} is invalid: its {what} is a symbolic link "
                    "(never followed)",
                    code=LINEAGE_SYMLINK,
                    lineage_id=lineage_id,
                )
        return folder / EVIDENCE if evidence else folder

    # -- reading -----------------------------------------------------------------------
    def lineage_ids(self) -> list[str]:
        """Every lineage folder (temporary and hidden entries are not lineages)."""
        self.check_root()
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if valid_lineage(n) and (self.root / n).is_dir())

    def folder(self, lineage_id: str) -> Path:
        self.check_root()
        if not valid_lineage(lineage_id):
            raise ReviewRefused(
                f"{lineage_id[:80]!r} is not a lineage id (lower-case words and digits "
                "joined by '-')",
                code=LINEAGE_UNKNOWN,
                next=("factory review status",),
            )
        return self.root / lineage_id

    def exists(self, lineage_id: str) -> bool:
        return os.path.lexists(self.folder(lineage_id))

    def load(self, lineage_id: str) -> Loaded:
        """Load and fully re-validate one lineage.

        Raises:
            ReviewRefused: ``review-lineage-unknown`` when there is no such lineage.
            ReviewRecordCorrupt: the record or its receipt fails validation.
        """
        folder = self.folder(lineage_id)
        if not os.path.lexists(folder):
            raise ReviewRefused(
                f"there is no review lineage {lineage_id}",
                code=LINEAGE_UNKNOWN,
                next=("factory review status", "factory review start"),
            )
        self.lineage_dir(lineage_id)
        try:
            data = read_nofollow(folder / STATE_FILE, RECORD_LIMIT)
        except FileNotFoundError:
            raise corrupt_record(lineage_id, f"the folder has no {STATE_FILE}") from None
        except OSError as exc:
            raise corrupt_record(lineage_id, f"{STATE_FILE} cannot be read ({exc})") from None
        state, revision = decode_record(lineage_id, data)
        return Loaded(lineage_id, revision, state, self._receipt_status(state))

    def _receipt_status(self, state: ReviewState) -> Literal["ok", "missing", "none"]:
        path = self.root / state.lineage_id / RECEIPT_FILE
        try:
            data = read_nofollow(path, 1 << 20)
        except FileNotFoundError:
            return "missing" if state.state in RECEIPTED else "none"
        except OSError as exc:
            raise corrupt_record(
                state.lineage_id, f"{RECEIPT_FILE} cannot be read ({exc})"
            ) from None
        if state.state not in RECEIPTED:
            raise corrupt_record(state.lineage_id, f"a {state.state} lineage has a receipt")
        problem = receipt_problem(data, state)
        if problem is not None:
            raise corrupt_record(state.lineage_id, problem)
        return "ok"

    def scan(self) -> list[Loaded | Corrupt]:
        """Every lineage, each loaded on its own: one bad record never hides the others."""
        out: list[Loaded | Corrupt] = []
        for lineage_id in self.lineage_ids():
            try:
                out.append(self.load(lineage_id))
            except ReviewRecordCorrupt as exc:
                out.append(Corrupt(lineage_id, exc))
        return out

    # -- writing -----------------------------------------------------------------------
    def replace(
        self,
        expected_revision: str | None,
        new: ReviewState,
        *,
        command: str = "review",
        seed_blobs: Mapping[str, bytes] | None = None,
        blobs: Mapping[str, bytes] | None = None,
        previous: ReviewState | None = None,
    ) -> Committed:
        """Compare-and-swap ``new`` in for the lineage's current record.

        ``expected_revision`` is the revision the caller derived ``new`` from (``None`` to
        create the lineage). An identical current state is an idempotent success.
        ``seed_blobs`` (role → bytes) are stored with a new lineage, in the same rename;
        ``blobs`` (role → bytes) with an existing one, under the lock and only once the
        compare succeeded, so a caller that loses the race leaves nothing behind.
        ``previous``: the validated state at ``expected_revision``, if the caller holds it
        (saves re-decoding it under the lock for the successor rules).

        Raises:
            ReviewCasConflict: the lineage is not at ``expected_revision``.
            ReviewRecordCorrupt: the current record is invalid.
            AssertionError: ``new`` breaks an invariant or a successor rule (a bug).
        """
        problems = state_problems(new)
        if problems:
            raise AssertionError(f"refusing to store an invalid state: {problems[0]}")
        data, revision = record_bytes(new)
        with self.locked(command):
            current = self._current_revision(new.lineage_id)
            if current is not None and current == revision:
                return Committed(self.load(new.lineage_id), written=False)
            if current != expected_revision:
                raise ReviewCasConflict(
                    f"review lineage {new.lineage_id} moved on since it was read (expected "
                    f"{expected_revision}, found {current})"
                )
            if current is None:
                if new.state != "reviewing":
                    raise AssertionError("a lineage is created in reviewing")
                self._create(new.lineage_id, data, seed_blobs or {})
            else:
                if previous is None or revision_of(previous) != current:
                    previous = self.load(new.lineage_id).state
                problem = successor_problem(previous, new)
                if problem is not None:
                    raise AssertionError(f"refusing an illegal successor: {problem}")
                for role, blob in (blobs or {}).items():
                    self.put_blob(new.lineage_id, role, blob)
                path = self.root / new.lineage_id / STATE_FILE
                write_hook("replace:before")
                atomic_replace(path, data, mode=0o600)
                write_hook("replace:after")
            receipt: Literal["ok", "missing", "none"] = "none"
            if new.state in RECEIPTED:
                receipt = "missing"
            return Committed(Loaded(new.lineage_id, revision, new, receipt), written=True)

    def _current_revision(self, lineage_id: str) -> str | None:
        """The revision the lineage's record states (None when there is no lineage).

        Only the revision is read for the compare: the successor written over it is derived
        from a state that was fully validated when the caller loaded it. A record that does
        not even state a revision is corrupt.
        """
        folder = self.folder(lineage_id)
        if not os.path.lexists(folder):
            return None
        self.lineage_dir(lineage_id)
        try:
            data = read_nofollow(folder / STATE_FILE, RECORD_LIMIT)
        except OSError:
            raise corrupt_record(lineage_id, f"{STATE_FILE} is missing or unreadable") from None
        if data.startswith(_REVISION_PREFIX) and data[_REV_END : _REV_END + 2] == b'",':
            return data[len(_REVISION_PREFIX) - 7 : _REV_END].decode("ascii")
        return decode_record(lineage_id, data)[1]

    def _create(self, lineage_id: str, data: bytes, blobs: Mapping[str, bytes]) -> None:
        tmp = self.root / f".tmp-{lineage_id}-{secrets.token_hex(6)}"
        os.mkdir(tmp, 0o700)
        if blobs:
            os.mkdir(tmp / "evidence", 0o700)
            for role, blob in blobs.items():
                write_exclusive(tmp / "evidence" / f"{role}-{sha256_hex(blob)}", blob, mode=0o600)
        write_exclusive(tmp / STATE_FILE, data, mode=0o600)
        write_hook("create:before")
        os.rename(tmp, self.root / lineage_id)
        fsync_dir(self.root)
        write_hook("create:after")

    def write_receipt(self, loaded: Loaded) -> Path:
        """Write the terminal receipt derived from ``loaded`` (idempotent).

        Raises:
            ReviewRecordCorrupt: a receipt file exists and is not that derivation.
        """
        data = receipt_bytes(derive_receipt(loaded.state))
        with self.locked("review/receipt"):
            path = self.lineage_dir(loaded.lineage_id) / RECEIPT_FILE
            if self._receipt_status(loaded.state) == "ok":
                return path
            write_hook("receipt:before")
            atomic_replace(path, data, mode=0o644)
            write_hook("receipt:after")
        return path

    def put_blob(self, lineage_id: str, role: str, data: bytes) -> Path:
        """Store ``data`` as ``evidence/<role>-<sha256>`` (content-addressed, 0600)."""
        folder = self.lineage_dir(lineage_id, evidence=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{role}-{sha256_hex(data)}"
        try:
            write_exclusive(path, data, mode=0o600)
        except OutputExists:
            if sha256_hex(read_nofollow(path, len(data) + 1)) != sha256_hex(data):
                raise corrupt_record(
                    lineage_id, f"evidence {path.name} does not hash to its name"
                ) from None
        write_hook("blob:after")
        return path

    def read_blob(self, lineage_id: str, role: str, sha256: str) -> bytes:
        """The evidence blob ``<role>-<sha256>``, checked against its name.

        Raises:
            ReviewRecordCorrupt: missing, unreadable, or not hashing to its name.
        """
        path = self.lineage_dir(lineage_id, evidence=True) / f"{role}-{sha256}"
        try:
            data = read_nofollow(path, RECORD_LIMIT)
        except OSError:
            raise corrupt_record(lineage_id, f"evidence {role}-{sha256[:12]}… is missing") from None
        if sha256_hex(data) != sha256:
            raise corrupt_record(lineage_id, f"evidence {path.name} does not hash to its name")
        return data

    def blobs(self, lineage_id: str, role: str) -> list[Path]:
        """Every stored blob of ``role`` for the lineage."""
        folder = self.lineage_dir(lineage_id, evidence=True)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return []
        return sorted(
            folder / n for n in names if n.startswith(f"{role}-") and len(n) == len(role) + 65
        )
