"""The grant ledger: one exclusive file per spent grant (SPEC O-3).

A grant is spent when its entry ``<sha256(grant_id)>.json`` is created in the ledger
folder with ``O_CREAT|O_EXCL``; of two claimants exactly one succeeds, and a second use of
the same grant is ``grant-consumed``. The entry binds the grant (its canonical bytes'
digest), the intent revision and an idempotency key, so ``factory operator verify`` can
check offline that the receipt's grant was spent here once.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Final, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import Field

from factory.documents.canonical import canonical_bytes, digest, sha256_hex
from factory.errors import Refused
from factory.fsio import OutputExists, write_exclusive
from factory.models import StrictModel, parse_model
from factory.operator.grant import (
    Action,
    Clock,
    Expected,
    GrantRefused,
    SignedGrant,
    check_grant,
    system_clock,
    utc_text,
)

ENTRY_SCHEMA: Final = "factory.operator-ledger-entry/1"
IDEMPOTENCY_TAG: Final = "factory.operator-idempotency/1"
GRANT_DIGEST_TAG: Final = "factory.operator-grant/1"
ENTRY_LIMIT: Final = 64 << 10


class LedgerRefused(Refused):
    """The ledger folder cannot be used; nothing was spent (exit 2)."""


GRANT_CONSUMED = GrantRefused.define(
    "grant-consumed", "a grant is spent once: run the command again to authorize anew"
)
LEDGER_FOLDER_MISSING = LedgerRefused.define(
    "ledger-folder-missing", "create the folder that holds --ledger first"
)
LEDGER_ENTRY_INVALID = LedgerRefused.define(
    "ledger-entry-invalid", "the ledger entry was edited: keep it as evidence"
)
LEDGER_NOT_A_FOLDER = LedgerRefused.define("ledger-not-a-folder", "pass a folder as --ledger")
LEDGER_UNWRITABLE = LedgerRefused.define(
    "ledger-unwritable", "make the --ledger folder writable (permissions, read-only mount)"
)


class LedgerEntry(StrictModel):
    """``factory.operator-ledger-entry/1``: the record that a grant was spent."""

    schema_id: Literal["factory.operator-ledger-entry/1"] = Field(
        default=ENTRY_SCHEMA, alias="schema"
    )
    grant_id: str
    grant_digest: str
    intent_revision: str
    action: Action
    idempotency_key: str
    consumed_at: str


def entry_name(grant_id: str) -> str:
    """The ledger file name of a grant: the SHA-256 of its id, then ``.json``."""
    return sha256_hex(grant_id.encode("utf-8")) + ".json"


def grant_digest(signed: SignedGrant) -> str:
    """Domain-separated digest of the signed grant's canonical bytes."""
    return digest(GRANT_DIGEST_TAG, signed.to_json_value())


def idempotency_key(signed: SignedGrant) -> str:
    """``sha256(canonical{grant_id, intent_revision})`` under its own tag."""
    grant = signed.grant
    return digest(
        IDEMPOTENCY_TAG, {"grant_id": grant.grant_id, "intent_revision": grant.intent_revision}
    )


def open_ledger(path: Path) -> Path:
    """The ledger folder, created (0700, one level) when missing, and proved writable;
    absolute. It runs before the first prompt, so a ledger that cannot take an entry is
    refused before the operator types anything.

    Raises:
        LedgerRefused: ``ledger-not-a-folder`` (a file or symlink), ``ledger-folder-missing``,
            ``ledger-unwritable``.
    """
    folder = Path(os.path.abspath(path))
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        if not folder.parent.is_dir():
            raise LEDGER_FOLDER_MISSING("the folder holding --ledger does not exist") from None
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise LEDGER_NOT_A_FOLDER("--ledger is not a folder (a file or a symlink)")
    _probe(folder)
    return folder


def _probe(folder: Path) -> None:
    """Create and remove a file the way :func:`consume` creates an entry (``O_EXCL``): the
    only honest test of writability (``access(2)`` says yes to root on a read-only mount)."""
    probe = folder / f".probe-{secrets.token_hex(8)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise LEDGER_UNWRITABLE(
            f"no entry can be created in --ledger ({os.strerror(exc.errno or 0)})"
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def consume(
    value: Any,
    expected: Expected,
    public_key: Ed25519PublicKey,
    ledger: Path,
    clock: Clock = system_clock,
) -> tuple[SignedGrant, LedgerEntry, Path]:
    """Check a grant (see :mod:`factory.operator.grant`) and spend it once.

    Returns the grant, its ledger entry and the entry's path. After this returns the grant
    is spent: every later failure is an execution failure, never a refusal.

    Raises:
        GrantRefused: any check failed, or ``grant-consumed`` (the entry exists).
    """
    signed = check_grant(value, expected, public_key, clock)
    entry = LedgerEntry(
        grant_id=signed.grant.grant_id,
        grant_digest=grant_digest(signed),
        intent_revision=signed.grant.intent_revision,
        action=signed.grant.action,
        idempotency_key=idempotency_key(signed),
        consumed_at=utc_text(clock()),
    )
    path = ledger / entry_name(signed.grant.grant_id)
    try:
        write_exclusive(path, canonical_bytes(entry.to_json_value()) + b"\n", mode=0o600)
    except OutputExists:
        raise GRANT_CONSUMED("this grant was already used once") from None
    except OSError as exc:  # became unwritable after the probe: still nothing spent
        raise LEDGER_UNWRITABLE(f"the entry was not created ({exc.strerror})") from None
    return signed, entry, path


def read_entry(path: Path) -> LedgerEntry | None:
    """The entry at ``path``, or ``None`` when it is missing or not an entry."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, ENTRY_LIMIT)
    finally:
        os.close(fd)
    try:
        return parse_model(LedgerEntry, json.loads(data), code=LEDGER_ENTRY_INVALID)
    except (ValueError, RecursionError, LedgerRefused):
        return None
