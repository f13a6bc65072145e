"""Preserved lens payloads: a judgement that could not be captured is kept, never trusted
(SPEC R; the reference's ``preserve-result``).

When a lens answered but its result could not land in the store (the answer failed the
reviewer schema, the lineage moved, the store was busy or unwritable), the raw payload is
written as ``factory.review-preserved-lens-output/1`` — a schema deliberately unlike a
reviewer result, which ``finalize --result`` refuses by name. ``finalize
--replay-preserved FILE`` sends the payload through the full capture path (binding check,
strict reviewer schema, code-assigned ids, CAS) exactly as a live capture; the safety net
is never a second, weaker door.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, ValidationError

from factory.documents.canonical import canonical_bytes_plain, sha256_hex
from factory.documents.files import TooLarge, read_document
from factory.fsio import OutputExists, write_exclusive
from factory.models import StrictModel, describe_validation_error
from factory.review.documents import strict_json
from factory.review.errors import VALUE_INVALID, ReviewInputInvalid
from factory.review.judgement import PRESERVED_SCHEMA, ReviewerInput, parse_input
from factory.review.names import LensName
from factory.review.state import ReviewState
from factory.review.store import ReviewStore

PAYLOAD_LIMIT: Final = 1 << 20


class PreservedLensOutput(StrictModel):
    """An incident artifact: the raw lens payload and what it was meant to bind to."""

    schema_id: Literal["factory.review-preserved-lens-output/1"] = Field(alias="schema")
    lineage_id: str
    generation: int
    lens: LensName
    order: int
    binding: str
    target: str
    reason_code: str
    reason: str
    route: Literal["subscription", "rehearsal"]
    cli_version: str
    payload_sha256: str
    payload_bytes: int
    payload_base64: str


def preserve(
    store: ReviewStore,
    state: ReviewState,
    lens: LensName,
    payload: bytes,
    *,
    reason_code: str,
    reason: str,
    route: Literal["subscription", "rehearsal"],
    cli_version: str,
    fallback: Path,
) -> Path:
    """Write the artifact into the lineage's ``incidents/`` (or, if that fails, into
    ``fallback``) and return its path."""
    order, binding = state.binding(lens)
    doc = PreservedLensOutput(
        schema_id=PRESERVED_SCHEMA,
        lineage_id=state.lineage_id,
        generation=state.generation,
        lens=lens,
        order=order,
        binding=binding,
        target=state.initial_snapshot.identity,
        reason_code=reason_code,
        reason=reason[:500],
        route=route,
        cli_version=cli_version[:200],
        payload_sha256=sha256_hex(payload),
        payload_bytes=len(payload),
        payload_base64=base64.b64encode(payload).decode("ascii"),
    )
    data = canonical_bytes_plain(doc.to_json_value()) + b"\n"
    name = f"{lens}-{sha256_hex(payload)}.json"
    inside = store.root / state.lineage_id / "incidents"
    for folder in (inside, fallback):
        if folder is inside and (os.path.islink(inside) or os.path.islink(inside.parent)):
            continue  # never written through a link (issue 23 §4): the fallback keeps it
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_exclusive(folder / name, data, mode=0o600)
            return folder / name
        except OutputExists:
            return folder / name
        except OSError:
            continue
    raise OSError("no folder accepted the preserved lens output")


def load_preserved(path: Path) -> tuple[PreservedLensOutput, bytes]:
    """Read an artifact strictly and return it with its verified payload.

    Raises:
        ReviewInputInvalid: not an artifact, or its payload does not match its digest.
    """
    try:
        raw = read_document(path, limit=4 * PAYLOAD_LIMIT, follow=True)
    except TooLarge:
        raise ReviewInputInvalid(
            f"the preserved artifact is larger than {4 * PAYLOAD_LIMIT} bytes"
        ) from None
    except OSError as exc:
        raise VALUE_INVALID(f"cannot read --replay-preserved {path}: {exc.strerror}") from None
    strict_json(raw, what="the preserved artifact", limit=4 * PAYLOAD_LIMIT)
    try:
        doc = PreservedLensOutput.model_validate_json(raw)
    except ValidationError as exc:
        raise ReviewInputInvalid(
            f"--replay-preserved is not a {PRESERVED_SCHEMA} artifact: "
            f"{describe_validation_error(exc)}"
        ) from None
    try:
        payload = base64.b64decode(doc.payload_base64, validate=True)
    except binascii.Error:
        raise ReviewInputInvalid("the preserved payload is not base64") from None
    if sha256_hex(payload) != doc.payload_sha256 or len(payload) != doc.payload_bytes:
        raise ReviewInputInvalid("the preserved payload does not match its recorded digest")
    return doc, payload


def replayable(store: ReviewStore, state: ReviewState, lens: LensName) -> Path | None:
    """A preserved artifact for ``lens`` of this lineage whose payload is a valid reviewer
    result (rerunning the lens would pay twice for a judgement that exists)."""
    folder = store.root / state.lineage_id / "incidents"
    if os.path.islink(folder) or not folder.is_dir():
        return None
    for path in sorted(folder.glob(f"{lens}-*.json")):
        try:
            doc, payload = load_preserved(path)
            parse_input(ReviewerInput, payload, what="the preserved payload")
        except ReviewInputInvalid:
            continue
        if (doc.lineage_id, doc.binding) == (state.lineage_id, state.binding(lens)[1]):
            return path
    return None
