"""Builders for review states without git: synthetic trees, findings and inputs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from factory.documents.canonical import sha256_hex, tagged_sha256
from factory.review import machine
from factory.review.documents import EVIDENCE_TAG
from factory.review.judgement import ReviewerInput, ValidatorInput
from factory.review.names import LensName
from factory.review.results import LensResult, LensSource, build_lens_result
from factory.review.risk import Risk, RiskReason
from factory.review.state import FinalEvidence, ReviewState, Snapshot, make_snapshot

BASE = "1" * 40
CAND = "2" * 40
POLICY = "sha256:" + "7" * 64
PATHS = ("src/payments/charge.py", "src/payments/cache.py", "src/net/timeout.py", "README.md")


def tree(n: int) -> str:
    """A distinct fake tree id."""
    return hashlib.sha1(str(n).encode()).hexdigest()


def snapshot(paths: tuple[str, ...] = PATHS, cand: str = CAND) -> Snapshot:
    return make_snapshot("current-changes", BASE, cand, paths, ())


def risk(level: str = "medium") -> Risk:
    code = {"low": "docs_only", "medium": "executable_change", "high": "hot_path"}[level]
    return Risk(level=level, reasons=(RiskReason(code=code, example=None),))  # type: ignore[arg-type]


def create(
    *, level: str = "medium", lines: int = 120, paths: tuple[str, ...] = PATHS
) -> machine.Create:
    snap = snapshot(paths)
    return machine.Create(
        lineage_id="review-" + snap.identity.removeprefix("sha256:")[:16],
        policy_hash=POLICY,
        focus="reliability",
        snapshot=snap,
        risk=risk(level),
        changed_lines=lines,
    )


def started(**kw: Any) -> ReviewState:
    return machine.apply(None, create(**kw))


def finding(
    location: str,
    severity: str = "CRITICAL",
    evidence_class: str | None = "deterministic",
    causal: str | None = "introduced",
    claim: str = "the candidate accepts a negative amount",
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "location": location,
        "severity": severity,
        "claim": claim,
        "proof_refs": ["test_negative_amount fails on the candidate, passes on base"],
    }
    if evidence_class is not None:
        doc["evidence_class"] = evidence_class
    if causal is not None:
        doc["causal_disposition"] = causal
    return doc


def reviewer_json(findings: list[dict[str, Any]], **extra: Any) -> bytes:
    doc = {"findings": findings, "evidence": ["read the whole candidate diff"], **extra}
    return json.dumps(doc).encode()


def lens_result(state: ReviewState, lens: LensName, findings: list[dict[str, Any]]) -> LensResult:
    raw = reviewer_json(findings)
    order, binding = state.binding(lens)
    source = LensSource(
        kind="result-file",
        raw_sha256=sha256_hex(raw),
        raw_bytes=len(raw),
        route=None,
        cli_version=None,
    )
    return build_lens_result(
        ReviewerInput.model_validate_json(raw),
        lens=lens,
        order=order,
        binding=binding,
        source=source,
    )


def record_all(state: ReviewState, findings: dict[str, list[dict[str, Any]]]) -> ReviewState:
    for lens in state.lenses:
        state = machine.apply(
            state, machine.RecordLens(lens_result(state, lens, findings.get(lens, [])))
        )
    return state


def validation(passed: bool = True, regression: bool = True) -> ValidatorInput:
    doc = {
        "original_criteria": {"passed": passed, "evidence": ["test_negative_amount passes"]},
        "correction_regression": {"passed": regression, "evidence": ["the suite passes: 40 tests"]},
        "follow_ups": [],
    }
    return ValidatorInput.model_validate_json(json.dumps(doc))


def fix(
    state: ReviewState, n: int, lines: int, paths: tuple[str, ...] | None = None
) -> machine.CompleteFix:
    assert state.review is not None
    new_tree = tree(n) if lines else state.current_snapshot.candidate_tree
    touched = paths if paths is not None else state.genesis_paths[:1]
    delta = make_snapshot(
        "fix-diff",
        state.current_snapshot.candidate_tree,
        new_tree,
        touched if lines else (),
        (),
        state.review.fix_finding_ids,
    )
    cand = make_snapshot("current-changes", BASE, new_tree, state.genesis_paths, ())
    return machine.CompleteFix(
        fix=delta, candidate=cand, actual_lines=lines, validation=validation()
    )


def evidence(data: bytes = b"pytest: 40 passed\n", failed: bool = False) -> FinalEvidence:
    return FinalEvidence(
        evidence_hash=tagged_sha256(EVIDENCE_TAG, data),
        sha256=sha256_hex(data),
        bytes=len(data),
        source="file",
        run=None,
        declared_failed=failed,
    )
