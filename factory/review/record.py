"""The bytes of one lineage's ``review-state.json`` (SPEC R): ``{schema, revision, state}``
where ``revision`` is the domain-separated digest of the canonical state. :func:`record_bytes`
writes them; :func:`decode_record` re-validates everything (strict JSON, the revision, the
models, the invariants) and fails closed naming the lineage. Used by
:mod:`factory.review.store`, which owns where the bytes live and when they are replaced.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, ValidationError

from factory.documents.canonical import canonical_bytes_plain, digest_plain, tagged_sha256
from factory.errors import FactoryError
from factory.models import StrictModel, describe_validation_error
from factory.review.documents import STATE_TAG, strict_json_plain
from factory.review.errors import ReviewInputInvalid, ReviewRecordCorrupt
from factory.review.invariants import state_problems
from factory.review.memo import ByIdentity
from factory.review.state import ReviewState

RECORD_SCHEMA: Final = "factory.review-state-record/1"
RECORD_LIMIT = 64 << 20


class StateRecord(StrictModel):
    """``review-state.json``."""

    schema_id: Literal["factory.review-state-record/1"] = Field(alias="schema")
    revision: str
    state: ReviewState


_HEAD = b'{"revision":"'
_SCHEMA_MEMBER = b'","schema":"' + RECORD_SCHEMA.encode("ascii") + b'","state":'

#: The revisions of the last states this process serialised (see :mod:`.memo`).
_REVISIONS: ByIdentity[ReviewState, str] = ByIdentity(8)


#: The state's members that successive states of one finalize share (``model_copy`` keeps
#: them, the very same objects) and that are most of a record's bytes: a snapshot and the
#: genesis paths are each ~1/3 of a record for a 5,000-file candidate.
_SHARED: Final = ("current_snapshot", "genesis_paths", "initial_snapshot")
#: Canonical bytes of the last shared members this process encoded.
_MEMBERS: ByIdentity[StrictModel | tuple[str, ...], bytes] = ByIdentity(12)


def _member_bytes(value: StrictModel | tuple[str, ...]) -> bytes:
    known = _MEMBERS.get(value)
    if known is None:
        plain = value.to_json_value() if isinstance(value, StrictModel) else list(value)
        known = canonical_bytes_plain(plain)
        _MEMBERS.put(value, known)
    return known


def state_canonical(state: ReviewState) -> bytes:
    """RFC 8785 bytes of ``state.to_json_value()``, assembled member by member: the members
    named in :data:`_SHARED` are encoded once per object, the rest each time. Every member
    name is an ASCII identifier, so it needs no escaping and sorts as RFC 8785 sorts it."""
    rest = state.model_dump(mode="json", by_alias=True, exclude=set(_SHARED))
    members = {key: canonical_bytes_plain(value) for key, value in rest.items()}
    members.update((name, _member_bytes(getattr(state, name))) for name in _SHARED)
    body = b",".join(b'"%s":%s' % (key.encode("ascii"), members[key]) for key in sorted(members))
    return b"{" + body + b"}"


def _state_bytes(state: ReviewState) -> tuple[bytes, str]:
    body = state_canonical(state)
    revision = tagged_sha256(STATE_TAG, body)
    _REVISIONS.put(state, revision)
    return body, revision


def revision_of(state: ReviewState) -> str:
    """The revision of ``state`` (domain-separated digest of its canonical JSON)."""
    known = _REVISIONS.get(state)
    return known if known is not None else _state_bytes(state)[1]


def record_bytes(state: ReviewState) -> tuple[bytes, str]:
    """The exact bytes of ``review-state.json`` for ``state``, and its revision.

    RFC 8785 of ``{schema, revision, state}``: members in key order (``revision``,
    ``schema``, ``state``), the first two ASCII strings that need no escaping, the state's
    canonical bytes spliced in as they are (so the state is canonicalised once).
    """
    body, revision = _state_bytes(state)
    return _HEAD + revision.encode("ascii") + _SCHEMA_MEMBER + body + b"}\n", revision


def read_nofollow(path: Path, limit: int) -> bytes:
    """The bytes of regular file ``path`` (never through a symlink), at most ``limit``.

    Raises:
        OSError: missing, not a regular file, or larger than ``limit``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise OSError("larger than the record limit")
        return b"".join(chunks)
    finally:
        os.close(fd)


def corrupt_record(lineage_id: str, problem: str) -> ReviewRecordCorrupt:
    """The typed error for a record that fails validation, naming its lineage."""
    return ReviewRecordCorrupt(
        f"review lineage {lineage_id} is invalid: {problem} (kept as it is)", lineage_id=lineage_id
    )


def decode_record(lineage_id: str, data: bytes) -> tuple[ReviewState, str]:
    """Validate record bytes completely; return the state and its revision.

    Raises:
        ReviewRecordCorrupt: naming ``lineage_id`` and the first problem.
    """
    try:
        value, plain = strict_json_plain(data, what="the record", limit=RECORD_LIMIT)
    except ReviewInputInvalid as exc:
        raise corrupt_record(lineage_id, exc.fact) from None
    if not isinstance(value, dict) or set(value) != {"schema", "revision", "state"}:
        raise corrupt_record(lineage_id, "the record is not {schema, revision, state}")
    if value["schema"] != RECORD_SCHEMA:
        raise corrupt_record(lineage_id, f"unknown record schema {str(value['schema'])[:60]!r}")
    try:
        revision = digest_plain(STATE_TAG, value["state"], plain=plain)
    except FactoryError:  # e.g. a lone surrogate: not canonicalisable JSON text
        raise corrupt_record(lineage_id, "the state is not canonicalisable JSON") from None
    if value["revision"] != revision:
        raise corrupt_record(lineage_id, "the revision does not match the state")
    try:
        state = StateRecord.model_validate_json(data).state
    except ValidationError as exc:
        raise corrupt_record(lineage_id, describe_validation_error(exc)) from None
    if state.lineage_id != lineage_id:
        raise corrupt_record(lineage_id, "the state names another lineage than its folder")
    problems = state_problems(state)
    if problems:
        raise corrupt_record(lineage_id, problems[0])
    return state, revision
