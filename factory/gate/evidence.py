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
keys, no NaN, bounded depth), closed field sets, ids and instants checked. Loading a
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

from factory.canonical import sha256_hex
from factory.documents.reading import JsonRefused, read_json
from factory.gate.errors import EvidenceRefused
from factory.gate.values import OutsideDomain, parse_instant

SCHEMA = "factory.gate-observation/1"
SIGNATURE_TAG = b"factory.gate-observation/1\x00"
MAX_EVIDENCE_BYTES = 1 << 20
ACQUIRED_PREFIX = "acq:"
EVIDENCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
SCOPES = ("tree", "commit", "repository", "file", "none")
OPERATIONAL = (
    "observation-unparsable",
    "observation-outside-domain",
    "provider-timeout",
    "provider-crashed",
    "provider-unavailable",
    "provider-output-limit",
    "provider-refused",
)
INTEGRITY = ("evidence-hash-mismatch", "signature-invalid", "witness-forged")
_FIELDS = {
    "schema", "condition", "ingress", "producer", "actor", "content_type", "derivation",
    "scope", "observed_at", "observation", "mutated", "artefacts",
}  # fmt: skip
_REQUIRED = _FIELDS - {"actor", "derivation", "mutated", "artefacts"}


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
        raise EvidenceRefused("an evidence id is 1-128 letters, digits, '_', '.', ':', '-'")
    if ingress == "submitted" and evidence_id.startswith(ACQUIRED_PREFIX):
        raise EvidenceRefused(f"evidence ids starting {ACQUIRED_PREFIX!r} are for acquisitions")
    digest = sha256_hex(payload)
    try:
        record = _parse(evidence_id, payload, digest, digest, signature)
    except ValueError as exc:
        raise EvidenceRefused(f"evidence {evidence_id} refused: {exc}") from None
    if record.condition not in conditions:
        raise EvidenceRefused(
            f"evidence {evidence_id} names condition {record.condition!r}, which the "
            "scenario does not declare"
        )
    if record.ingress != ingress:
        raise EvidenceRefused(
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
    except ValueError as exc:
        problem = Failure("operational", "observation-unparsable", str(exc))
        return Evidence(evidence_id, payload, actual, declared_sha256, signature, problem=problem)


def _parse(
    evidence_id: str, payload: bytes, digest: str, declared: str, signature: Signature | None
) -> Evidence:
    try:
        doc = read_json(payload, limit=MAX_EVIDENCE_BYTES, decimals=True, lone_surrogates=True)
    except JsonRefused as exc:
        raise ValueError(f"not a {SCHEMA} document: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError("the document is not an object")
    extra = sorted(set(doc) - _FIELDS)
    missing = sorted(_REQUIRED - set(doc))
    if extra or missing:
        raise ValueError(f"unknown field {extra[0]!r}" if extra else f"lacks {missing[0]!r}")
    if doc["schema"] != SCHEMA:
        raise ValueError(f"schema must be {SCHEMA!r}")
    if doc["ingress"] not in ("submitted", "acquired"):
        raise ValueError("ingress must be submitted or acquired")
    scope_kind, scope_value = _scope(doc["scope"])
    try:
        observed_at = parse_instant(doc["observed_at"])
    except OutsideDomain as exc:
        raise ValueError(f"observed_at: {exc}") from None
    kind, value, universe, complete, failure = _observation(doc["observation"])
    mutated = doc.get("mutated", False)
    if not isinstance(mutated, bool):
        raise ValueError("mutated must be true or false")
    _artefacts(doc.get("artefacts", []))
    return Evidence(
        evidence_id, payload, digest, declared, signature,
        condition=_short(doc["condition"], "condition"),
        ingress=doc["ingress"],
        producer=_short(doc["producer"], "producer"),
        actor=None if doc.get("actor") is None else _short(doc["actor"], "actor"),
        content_type=_short(doc["content_type"], "content_type"),
        derivation=_derivation(doc.get("derivation", [])),
        scope_kind=scope_kind, scope_value=scope_value, observed_at=observed_at,
        kind=kind, value=value, universe=universe, complete=complete, failure=failure,
        mutated=mutated,
    )  # fmt: skip


def _short(value: Any, what: str, limit: int = 256) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise ValueError(f"{what} must be a non-empty string of at most {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} holds a lone surrogate") from None
    return value


def _scope(raw: Any) -> tuple[str, str | None]:
    if not isinstance(raw, dict) or not set(raw) <= {"kind", "value"} or "kind" not in raw:
        raise ValueError("scope must be {kind, value}")
    if raw["kind"] not in SCOPES:
        raise ValueError(f"scope.kind must be one of {', '.join(SCOPES)}")
    value = raw.get("value")
    if value is not None:
        value = _short(value, "scope.value", 4096)
    return raw["kind"], value


def _observation(raw: Any) -> tuple[str, Any, str | None, bool, Failure | None]:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ValueError("observation must be exactly one of value, absent, failure")
    ((kind, body),) = raw.items()
    if kind == "value":
        return "value", body, None, False, None
    if kind == "absent":
        if not isinstance(body, dict) or set(body) != {"universe", "complete"}:
            raise ValueError("observation.absent must be {universe, complete}")
        if not isinstance(body["complete"], bool):
            raise ValueError("observation.absent.complete must be true or false")
        return "absent", None, _short(body["universe"], "universe"), body["complete"], None
    if kind == "failure":
        if not isinstance(body, dict) or set(body) != {"family", "code", "message"}:
            raise ValueError("observation.failure must be {family, code, message}")
        family, code = body["family"], body["code"]
        known = (
            OPERATIONAL if family == "operational" else INTEGRITY if family == "integrity" else ()
        )
        if code not in known:
            raise ValueError("observation.failure: unknown family or code")
        return (
            "failure",
            None,
            None,
            False,
            Failure(family, code, _short(body["message"], "message", 1024)),
        )
    raise ValueError("observation must be exactly one of value, absent, failure")


def _derivation(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > 256:
        raise ValueError("derivation must be a list of at most 256 evidence ids")
    for item in raw:
        if not isinstance(item, str) or not EVIDENCE_ID.fullmatch(item):
            raise ValueError("derivation holds something that is not an evidence id")
    return tuple(raw)


def _artefacts(raw: Any) -> None:
    if not isinstance(raw, list) or len(raw) > 64:
        raise ValueError("artefacts must be a list of at most 64 {role, sha256, bytes}")
    for item in raw:
        if (
            not isinstance(item, dict)
            or set(item) != {"role", "sha256", "bytes"}
            or not isinstance(item["sha256"], str)
            or not re.fullmatch(r"[0-9a-f]{64}", item["sha256"])
            or type(item["bytes"]) is not int
        ):
            raise ValueError("artefacts must be a list of {role, sha256, bytes}")


def parse_signature(key_id: str, text: str) -> Signature:
    """A detached signature from its key id and base64 text; ``ValueError`` otherwise."""
    if not EVIDENCE_ID.fullmatch(key_id):
        raise ValueError("a key id is 1-128 letters, digits, '_', '.', ':', '-'")
    try:
        value = base64.b64decode(text.strip(), validate=True)
    except binascii.Error as exc:
        raise ValueError("the signature is not base64") from exc
    if len(value) != 64:
        raise ValueError("an Ed25519 signature is 64 bytes")
    return Signature(key_id, value)


def signed_message(payload: bytes) -> bytes:
    """The exact bytes an evidence signature covers."""
    return SIGNATURE_TAG + payload
