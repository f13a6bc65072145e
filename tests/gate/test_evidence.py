"""The admission boundary, evidence policies over facets, and the failure families."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from factory.gate.errors import EvidenceRefused
from factory.gate.evidence import MAX_EVIDENCE_BYTES, Signature, load, signed_message
from factory.gate.resolve import Context, resolve
from factory.gate.scenario import Scenario
from tests.gate.helpers import NOW, condition, evidence, observation, scenario

KEY = Ed25519PrivateKey.generate()
OTHER = Ed25519PrivateKey.generate()
PUBLIC = base64.b64encode(KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def sc_with(policy: dict[str, Any], params: list[str] | None = None, **extra: Any) -> Scenario:
    return scenario(
        [condition("c", policy=policy, **extra)], params=params, keys={"ci": {"ed25519": PUBLIC}}
    )


def resolved(sc: Scenario, records: list[Any], params: dict[str, str] | None = None) -> Any:
    return resolve(sc.conditions["c"], records, Context(params or {}, sc.keys, NOW))


def sign(payload: bytes, key: Ed25519PrivateKey = KEY, key_id: str = "ci") -> Signature:
    return Signature(key_id, key.sign(signed_message(payload)))


# -- admission -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b'{"schema": 1, "schema": 2}', "twice"),
        (b"NaN", "not a JSON number"),
        (b"\xff", "UTF-8"),
        (b"[" * 40 + b"]" * 40, "deeper"),
        (b"x" * (MAX_EVIDENCE_BYTES + 1), "larger"),
        (observation("c", 0, extra=1), "unknown field"),
        (observation("c", 0, observed_at="today"), "observed_at"),
        (observation("c", 0, observed_at="2026-01-01T00:00:00"), "offset"),
        (observation("zz", 0), "does not declare"),
        (observation("c", 0, ingress="acquired"), "ingress"),
        (observation("c", 0, scope={"kind": "planet"}), "scope.kind"),
        (observation("c", 0, derivation=["bad id!"]), "derivation"),
        (
            observation("c", failure={"family": "operational", "code": "made-up", "message": "m"}),
            "unknown family",
        ),
        (json.dumps({"schema": "factory.gate-observation/2"}).encode(), "lacks"),
    ],
)
def test_admission_refuses_hostile_input(payload: bytes, match: str) -> None:
    sc = sc_with({})
    with pytest.raises(EvidenceRefused, match=match):
        evidence(sc, "e1", payload)


def test_admission_refuses_bad_ids_and_negative_control_admits() -> None:
    sc = sc_with({})
    for bad in ("", "has space", "x" * 200, "-lead"):
        with pytest.raises(EvidenceRefused, match="evidence id"):
            evidence(sc, bad, observation("c", 0))
    record = evidence(sc, "ok:1", observation("c", 0))
    assert record.sha256 == record.declared_sha256 and record.problem is None


# -- policy over facets ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "facets", "reason"),
    [
        ({"ingress": ["acquired"]}, {}, "ingress-not-allowed"),
        ({"producers": ["factory:*"]}, {"producer": "ci"}, "producer-not-allowed"),
        (
            {"scope": {"kind": "tree", "value": "abc"}},
            {"scope": {"kind": "tree", "value": "def"}},
            "scope-mismatch",
        ),
        (
            {"scope": {"kind": "tree", "value": "abc"}},
            {"scope": {"kind": "commit", "value": "abc"}},
            "scope-mismatch",
        ),
        ({"max_age_s": 60}, {"observed_at": "2026-01-01T00:00:00Z"}, "too-old"),
        ({}, {"observed_at": "2026-01-01T00:10:01Z"}, "observed-in-the-future"),
        ({"signed_by": ["ci"]}, {}, "not-signed-by-a-listed-key"),
    ],
)
def test_policy_refusals_make_the_condition_insufficient(
    policy: dict[str, Any], facets: dict[str, Any], reason: str
) -> None:
    sc = sc_with(policy)
    got = resolved(sc, [evidence(sc, "e", observation("c", 0, **facets))])
    assert (got.resolution, got.result) == ("insufficient", "unknown")
    assert reason in got.rejected[0][1]


@pytest.mark.parametrize(
    ("policy", "facets"),
    [
        ({"ingress": ["submitted"]}, {}),
        ({"producers": ["factory:*"]}, {"producer": "factory:ci"}),
        ({"scope": {"kind": "tree", "value": "abc"}}, {"scope": {"kind": "tree", "value": "abc"}}),
        ({"max_age_s": 600}, {"observed_at": "2026-01-01T00:00:00Z"}),
        ({}, {"observed_at": "2026-01-01T00:10:00Z"}),
    ],
)
def test_negative_controls_of_each_policy_refusal(
    policy: dict[str, Any], facets: dict[str, Any]
) -> None:
    sc = sc_with(policy)
    got = resolved(sc, [evidence(sc, "e", observation("c", 0, **facets))])
    assert (got.resolution, got.result) == ("present", "true")


def test_scope_by_param_binds_the_run() -> None:
    sc = sc_with({"scope": {"kind": "tree", "param": "tree"}}, params=["tree"])
    rec = evidence(sc, "e", observation("c", 0, scope={"kind": "tree", "value": "T1"}))
    assert resolved(sc, [rec], {"tree": "T1"}).result == "true"
    assert resolved(sc, [rec], {"tree": "T2"}).resolution == "insufficient"


def test_a_failed_acquisition_under_a_scope_policy_fails_rather_than_hides() -> None:
    sc = sc_with({"scope": {"kind": "tree", "param": "tree"}}, params=["tree"])
    crash = {"family": "operational", "code": "provider-crashed", "message": "m"}
    failed = evidence(sc, "f", observation("c", failure=crash, observed_at="2026-01-01T00:01:00Z"))
    outcome = resolved(sc, [failed], {"tree": "T1"})
    assert (outcome.resolution, outcome.result) == ("failed", "failed")
    assert outcome.failures[0].code == "provider-crashed"
    # negative control: a newer observation of the right tree supersedes the failure, and a
    # value for another tree is still refused by scope
    good = evidence(
        sc, "g", observation("c", 0, scope={"kind": "tree", "value": "T1"},
                              observed_at="2026-01-01T00:02:00Z"),
    )  # fmt: skip
    assert resolved(sc, [failed, good], {"tree": "T1"}).result == "true"
    other = evidence(
        sc, "o", observation("c", 0, scope={"kind": "tree", "value": "T2"},
                              observed_at="2026-01-01T00:02:00Z"),
    )  # fmt: skip
    assert resolved(sc, [other], {"tree": "T1"}).resolution == "insufficient"


def test_independence_needs_another_actor_and_proof_for_submitted_evidence() -> None:
    sc = sc_with({"independent": True}, params=["actor"])
    params = {"actor": "worker"}
    own = evidence(sc, "own", observation("c", 0, actor="worker"))
    claimed = evidence(sc, "claimed", observation("c", 0, actor="ci"))
    payload = observation("c", 0, actor="ci")
    signed = evidence(sc, "signed", payload, signature=sign(payload))
    anonymous = evidence(sc, "anon", observation("c", 0))
    for record in (own, claimed, anonymous):
        assert "not-independent-of-actor" in resolved(sc, [record], params).rejected[0][1]
    assert resolved(sc, [signed], params).result == "true"
    acquired = evidence(
        sc, "acq", observation("c", 0, actor="factory", ingress="acquired"), ingress="acquired"
    )
    assert resolved(sc, [acquired], params).result == "true"


def test_a_tree_changing_observation_is_insufficient() -> None:
    sc = sc_with({})
    rec = evidence(sc, "e", observation("c", 0, mutated=True))
    assert "observation-changed-what-it-measured" in resolved(sc, [rec]).rejected[0][1]


# -- failure families ---------------------------------------------------------------------


def test_a_hash_mismatch_is_an_integrity_failure() -> None:
    sc = sc_with({})
    good = evidence(sc, "e", observation("c", 0))
    tampered = load("e", observation("c", 1), good.declared_sha256, None)
    got = resolved(sc, [tampered])
    assert (got.resolution, got.result) == ("failed", "failed")
    assert (got.failures[0].family, got.failures[0].code) == ("integrity", "evidence-hash-mismatch")


def test_a_bad_signature_is_an_integrity_failure_even_beside_good_evidence() -> None:
    sc = sc_with({})
    payload = observation("c", 0)
    forged = evidence(sc, "forged", payload, signature=sign(payload, OTHER))
    honest = evidence(sc, "honest", observation("c", 0, observed_at="2026-01-01T00:05:00Z"))
    got = resolved(sc, [honest, forged])
    assert got.failures[0].code == "signature-invalid" and got.result == "failed"


def test_a_signature_by_an_undeclared_key_proves_nothing_but_is_no_forgery() -> None:
    sc = sc_with({"signed_by": ["ci"]})
    payload = observation("c", 0)
    rec = evidence(sc, "e", payload, signature=sign(payload, key_id="stranger"))
    got = resolved(sc, [rec])
    assert got.resolution == "insufficient"
    ok = evidence(sc, "e2", payload, signature=sign(payload))
    assert resolved(sc, [ok]).result == "true"


def test_an_unparsable_stored_record_is_not_silently_used() -> None:
    sc = sc_with({})
    junk = b"not json"
    from factory.documents.canonical import sha256_hex

    rec = load("j", junk, sha256_hex(junk), None)
    assert rec.problem is not None and rec.problem.family == "operational"
    assert resolved(sc, [rec]).resolution == "insufficient"


def test_newest_eligible_record_wins_whatever_the_order() -> None:
    sc = sc_with({})
    old = evidence(sc, "b", observation("c", 1, observed_at="2026-01-01T00:00:00Z"))
    new = evidence(sc, "a", observation("c", 0, observed_at="2026-01-01T00:01:00Z"))
    assert resolved(sc, [old, new]).record == "a" == resolved(sc, [new, old]).record
    retry_after_timeout = evidence(
        sc,
        "t",
        observation(
            "c", failure={"family": "operational", "code": "provider-timeout", "message": "m"}
        ),
    )
    assert resolved(sc, [retry_after_timeout, new]).result == "true"
    assert (
        resolved(sc, [replace(retry_after_timeout, observed_at=new.observed_at + 1), new]).result
        == "failed"
    )


def test_max_age_is_inclusive_at_the_boundary() -> None:
    sc = sc_with({"max_age_s": 600})  # NOW is 00:10:00, so 00:00:00 is exactly 600 s old
    exact = evidence(sc, "e", observation("c", 0, observed_at="2026-01-01T00:00:00Z"))
    assert resolved(sc, [exact]).result == "true"
    late = evidence(sc, "f", observation("c", 0, observed_at="2025-12-31T23:59:59.999999999Z"))
    assert "too-old" in resolved(sc, [late]).rejected[0][1]


def test_a_lone_surrogate_in_a_facet_is_refused_at_admission() -> None:
    failure = {"family": "operational", "code": "provider-crashed", "message": "\ud800"}
    with pytest.raises(EvidenceRefused, match="surrogate"):
        evidence(sc_with({}), "e", observation("c", failure=failure))


def test_acquisition_ids_cannot_be_claimed_by_a_submitter() -> None:
    with pytest.raises(EvidenceRefused, match="acquisitions"):
        evidence(sc_with({}), "acq:c:0123", observation("c", 0))
