"""Evidence records, their facets, and the admission boundary (SPEC G: evidence).

An evidence record is the exact bytes of one ``factory.gate-observation/1`` document plus
its id and, optionally, a detached Ed25519 signature over ``TAG || NUL || bytes``. The
document carries the facets — not a score:

* ``ingress``: ``submitted`` (handed in) or ``acquired`` (produced by a factory provider);
* ``content_type``, ``producer``, ``actor`` (who produced the content; compared with the
  run's actor under test for independence), ``derivation`` (ids it came from), ``scope``
  (``{kind, value}``: the candidate tree, a commit, a repository, a file), ``observed_at``
  (an instant with offset);
* integrity: the SHA-256 of the bytes (computed here, never taken from the submitter) and
  the optional signature with its key id;
* ``observation``: ``{"value": V}``, ``{"absent": {"universe": U, "complete": true}}``, or
  — for an acquisition that could not observe — ``{"failure": {family, code, message}}``;
* ``mutated``: an acquisition changed what it measured (e.g. a command changed the tree).

Admission (:func:`admit`) is hostile by default: a size cap, strict JSON (no duplicate
keys, no NaN, bounded depth), then the strict model
:class:`factory.gate.observation.Observation` (closed field sets, ids and instants
checked). Loading a
stored record (:func:`load`) parses the same way but never raises: a record whose bytes no
longer hash to its digest, or no longer parse, is kept with that fact so the evaluator can
report an integrity or operational failure instead of silently dropping it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from factory.documents.canonical import sha256_hex
from factory.documents.reading import JsonRefused, read_json
from factory.gate.errors import EVIDENCE_REFUSED, EvidenceRefused
from factory.gate.observation import (
    EVIDENCE_ID_PATTERN,
    SCHEMA,
    AbsentObservation,
    ValueObservation,
    parse_observation,
)
from factory.gate.values import parse_instant

SIGNATURE_TAG = b"factory.gate-observation/1\x00"
MAX_EVIDENCE_BYTES = 1 << 20
ACQUIRED_PREFIX = "acq:"
EVIDENCE_ID = re.compile(EVIDENCE_ID_PATTERN)


@dataclass(frozen=True, slots=True)
class Signature:
    key_id: str
    value: bytes

    def to_json(self) -> dict[str, str]:
        return {"key_id": self.key_id, "ed25519": base64.b64encode(self.value).decode("ascii")}


@dataclass(frozen=True, slots=True)
class Failure:
    """An operational or integrity failure of one observation (data, not an exception)."""

    family: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"family": self.family, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class Evidence:
    """One admitted record, parsed. ``problem`` is set when the stored bytes no longer
    hash to ``declared_sha256`` (integrity) or no longer parse (operational)."""

    id: str
    payload: bytes
    sha256: str
    declared_sha256: str
    signature: Signature | None
    condition: str = ""
    ingress: str = ""
    producer: str = ""
    actor: str | None = None
    content_type: str = ""
    derivation: tuple[str, ...] = ()
    scope_kind: str = "none"
    scope_value: str | None = None
    observed_at: int = 0
    kind: str = "value"  # value | absent | failure
    value: Any = None
    universe: str | None = None
    complete: bool = False
    failure: Failure | None = None
    mutated: bool = False
    problem: Failure | None = None

    def ref(self) -> dict[str, Any]:
        """The record's identity in an evaluation: id, digest, signature."""
        return {
            "id": self.id,
            "sha256": self.declared_sha256,
            "signature": None if self.signature is None else self.signature.to_json(),
        }


def admit(
    evidence_id: str,
    payload: bytes,
    *,
    conditions: Mapping[str, Any],
    ingress: str,
    signature: Signature | None = None,
) -> Evidence:
    """Admit new evidence or raise :class:`EvidenceRefused` (nothing is stored here)."""
    if not isinstance(evidence_id, str) or not EVIDENCE_ID.fullmatch(evidence_id):
        raise EVIDENCE_REFUSED("an evidence id is 1-128 letters, digits, '_', '.', ':', '-'")
    if ingress == "submitted" and evidence_id.startswith(ACQUIRED_PREFIX):
        raise EVIDENCE_REFUSED(f"evidence ids starting {ACQUIRED_PREFIX!r} are for acquisitions")
    digest = sha256_hex(payload)
    try:
        record = _parse(evidence_id, payload, digest, digest, signature)
    except EvidenceRefused as exc:
        raise EVIDENCE_REFUSED(f"evidence {evidence_id} refused: {exc.fact}") from None
    if record.condition not in conditions:
        raise EVIDENCE_REFUSED(
            f"evidence {evidence_id} names condition {record.condition!r}, which the "
            "scenario does not declare"
        )
    if record.ingress != ingress:
        raise EVIDENCE_REFUSED(
            f"evidence {evidence_id} claims ingress {record.ingress!r}; this path admits "
            f"only {ingress!r}"
        )
    return record


def load(
    evidence_id: str, payload: bytes, declared_sha256: str, signature: Signature | None
) -> Evidence:
    """Re-parse a stored record; problems become data on the record (never raised)."""
    actual = sha256_hex(payload)
    if actual != declared_sha256:
        problem = Failure(
            "integrity", "evidence-hash-mismatch", "the stored bytes do not hash to the record"
        )
        return Evidence(evidence_id, payload, actual, declared_sha256, signature, problem=problem)
    try:
        return _parse(evidence_id, payload, actual, declared_sha256, signature)
    except EvidenceRefused as exc:
        problem = Failure("operational", "observation-unparsable", exc.fact)
        return Evidence(evidence_id, payload, actual, declared_sha256, signature, problem=problem)


def _parse(
    evidence_id: str, payload: bytes, digest: str, declared: str, signature: Signature | None
) -> Evidence:
    try:
        doc = read_json(payload, limit=MAX_EVIDENCE_BYTES, decimals=True, lone_surrogates=True)
    except JsonRefused as exc:
        raise EVIDENCE_REFUSED(f"not a {SCHEMA} document: {exc}") from None
    obs = parse_observation(doc)
    body = obs.observation
    kind, value, universe, complete, failure = "value", None, None, False, None
    if isinstance(body, ValueObservation):
        value = body.value
    elif isinstance(body, AbsentObservation):
        kind, universe, complete = "absent", body.absent.universe, body.absent.complete
    else:
        kind = "failure"
        failure = Failure(body.failure.family, body.failure.code, body.failure.message)
    return Evidence(
        evidence_id, payload, digest, declared, signature,
        condition=obs.condition, ingress=obs.ingress, producer=obs.producer, actor=obs.actor,
        content_type=obs.content_type, derivation=tuple(obs.derivation),
        scope_kind=obs.scope.kind, scope_value=obs.scope.value,
        observed_at=parse_instant(obs.observed_at),
        kind=kind, value=value, universe=universe, complete=complete, failure=failure,
        mutated=obs.mutated,
    )  # fmt: skip


def parse_signature(key_id: str, text: str) -> Signature:
    """A detached signature from its key id and base64 text; :data:`EVIDENCE_REFUSED`
    otherwise."""
    if not EVIDENCE_ID.fullmatch(key_id):
        raise EVIDENCE_REFUSED("a key id is 1-128 letters, digits, '_', '.', ':', '-'")
    try:
        value = base64.b64decode(text.strip(), validate=True)
    except binascii.Error as exc:
        raise EVIDENCE_REFUSED("the signature is not base64") from exc
    if len(value) != 64:
        raise EVIDENCE_REFUSED("an Ed25519 signature is 64 bytes")
    return Signature(key_id, value)


def signed_message(payload: bytes) -> bytes:
    """The exact bytes an evidence signature covers."""
    return SIGNATURE_TAG + payload
