"""Lens results as code owns them: bindings, finding ids, canonical order, hashes (SPEC R).

A lens's raw answer (:class:`~factory.review.judgement.ReviewerInput`) becomes a
:class:`LensResult` in one pure step, *before* any causal check: the lens and binding are
the ones start froze for that position, findings are put in canonical order (severity,
location, claim, proofs, classification) and numbered ``R<n>-001…`` per lens, evidence and
proof strings are trimmed, de-duplicated and sorted, and the whole is hashed. The same
judgement therefore always yields the same ids and the same ``result_hash``, whatever order
or spacing the model used.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from factory.documents.canonical import digest_plain
from factory.models import StrictModel
from factory.review.documents import BINDING_TAG, LENS_RESULT_TAG
from factory.review.errors import BINDING_MISMATCH
from factory.review.judgement import Concrete, FindingInput, Location, Proofs, ReviewerInput
from factory.review.names import (
    SEVERE,
    SEVERITY_RANK,
    Causality,
    EvidenceClass,
    LensName,
    Severity,
    finding_id,
)

BINDING_SCHEMA = "factory.review-lens-binding/1"


class Finding(StrictModel):
    """A canonical finding: code-assigned ``id`` and ``lens``, the model's judgement (its
    strings re-checked as concrete whenever a record is loaded)."""

    id: str
    lens: LensName
    location: Location
    severity: Severity
    claim: Concrete
    proof_refs: Proofs
    evidence_class: EvidenceClass | None
    causal_disposition: Causality | None

    @model_validator(mode="after")
    def _severe_is_classified(self) -> Finding:
        if self.severity in SEVERE and (
            self.evidence_class is None or self.causal_disposition is None
        ):
            raise ValueError("a severe finding has no evidence_class or causal_disposition")
        return self


class LensSource(StrictModel):
    """Where a lens result came from; its raw bytes are stored as evidence by SHA-256."""

    kind: Literal["lens-run", "result-file", "replayed-incident"]
    raw_sha256: str
    raw_bytes: int
    route: Literal["subscription", "rehearsal"] | None
    cli_version: str | None


class LensResult(StrictModel):
    """One selected lens's judgement, frozen: never rerun, ids never change."""

    lens: LensName
    order: int
    binding: str
    findings: tuple[Finding, ...]
    evidence: tuple[str, ...]
    result_hash: str
    source: LensSource


def binding_digest(
    lineage_id: str, generation: int, target: str, lens: str, order: int, of: int
) -> str:
    """The digest a lens's prompt carries and its result is checked against."""
    body = {
        "lineage_id": lineage_id,
        "generation": generation,
        "target": target,
        "lens": lens,
        "order": order,
        "of": of,
    }
    return digest_plain(BINDING_TAG, body)


def binding_text(
    lineage_id: str, generation: int, target: str, lens: str, order: int, of: int
) -> str:
    """The exact binding block a lens prompt must start with (one ``key=value`` a line)."""
    return "\n".join(
        (
            BINDING_SCHEMA,
            f"lineage={lineage_id}",
            f"generation={generation}",
            f"target={target}",
            f"lens={lens}",
            f"order={order}/{of}",
            f"binding={binding_digest(lineage_id, generation, target, lens, order, of)}",
        )
    )


def _norm(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({s.strip() for s in items}))


def _sort_key(f: FindingInput | Finding) -> tuple[object, ...]:
    return (
        SEVERITY_RANK[f.severity],
        f.location,
        f.claim,
        _norm(f.proof_refs),
        f.evidence_class or "",
        f.causal_disposition or "",
    )


def _canonical_findings(lens: LensName, raw: tuple[FindingInput, ...]) -> tuple[Finding, ...]:
    ordered = sorted(raw, key=_sort_key)
    return tuple(
        Finding(
            id=finding_id(lens, index),
            lens=lens,
            location=f.location,
            severity=f.severity,
            claim=f.claim,
            proof_refs=_norm(f.proof_refs),
            evidence_class=f.evidence_class,
            causal_disposition=f.causal_disposition,
        )
        for index, f in enumerate(ordered)
    )


def result_hash(
    lens: str, order: int, binding: str, findings: tuple[Finding, ...], evidence: tuple[str, ...]
) -> str:
    """The hash of a lens result's judgement (not of its source metadata)."""
    return _hash_of(lens, order, binding, [f.to_json_value() for f in findings], evidence)


def _hash_of(
    lens: str, order: int, binding: str, findings: list[Any], evidence: tuple[str, ...]
) -> str:
    """:func:`result_hash` over the findings' JSON values."""
    body = {
        "lens": lens,
        "order": order,
        "binding": binding,
        "findings": findings,
        "evidence": list(evidence),
    }
    return digest_plain(LENS_RESULT_TAG, body, plain=True)  # strings, None and small ints only


def build_lens_result(
    raw: ReviewerInput, *, lens: LensName, order: int, binding: str, source: LensSource
) -> LensResult:
    """Canonicalise a lens's answer for the lens and binding frozen at ``order``.

    Raises:
        ReviewInputInvalid: ``review-binding-mismatch`` when the answer names another lens
            or another binding (a judgement of something else is never re-labelled).
    """
    if raw.lens is not None and raw.lens != lens:
        raise BINDING_MISMATCH(
            f"result {order} says lens {raw.lens!r} but the lens selected at position "
            f"{order} is {lens!r}"
        )
    if raw.binding is not None and raw.binding != binding:
        raise BINDING_MISMATCH(
            f"result {order} carries a binding that is not the one start issued for lens "
            f"{lens!r} (it judged another target or lineage)"
        )
    findings = _canonical_findings(lens, raw.findings)
    evidence = _norm(raw.evidence)
    return LensResult(
        lens=lens,
        order=order,
        binding=binding,
        findings=findings,
        evidence=evidence,
        result_hash=result_hash(lens, order, binding, findings, evidence),
        source=source,
    )


def lens_result_problem(result: LensResult) -> str | None:
    """Why a stored lens result is not canonical, or None (used when a record is loaded)."""
    findings = result.findings
    keys = [_sort_key(f) for f in findings]
    if keys != sorted(keys):
        return f"lens {result.lens}: findings are not in canonical order"
    for index, f in enumerate(findings):
        if f.id != finding_id(result.lens, index) or f.lens != result.lens:
            return f"lens {result.lens}: finding ids are not the code-assigned ones"
        if _norm(f.proof_refs) != f.proof_refs:
            return f"lens {result.lens}: proof references are not canonical"
    if _norm(result.evidence) != result.evidence:
        return f"lens {result.lens}: evidence is not canonical"
    # One serialiser call for every finding (the same JSON as each finding's own dump).
    findings_json = result.model_dump(mode="json", by_alias=True, include={"findings"})
    expected = _hash_of(
        result.lens, result.order, result.binding, findings_json["findings"], result.evidence
    )
    if expected != result.result_hash:
        return f"lens {result.lens}: result_hash does not match its content"
    return None
