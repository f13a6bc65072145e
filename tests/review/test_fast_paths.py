"""The faster paths decide exactly as the slower ones they replaced: the record's bytes
and revision are computed once per state and are still RFC 8785 of ``{schema, revision,
state}``; a state is found valid once per object, never for an equal twin or an invalid
one; the one-pass sortedness check is sorting; re-deriving an admission field by field is
comparing the rebuilt models."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from factory.documents.canonical import canonical_bytes_plain, digest_plain
from factory.errors import FactoryError
from factory.review import machine
from factory.review.admission import (
    CLASSIFICATION_FIELDS,
    FOLLOW_UP_FIELDS,
    OUTCOME_FIELDS,
    Classification,
    FollowUp,
    OutcomeEntry,
    admit,
    rederives,
)
from factory.review.documents import STATE_TAG, strict_json_plain
from factory.review.invariants import state_problems
from factory.review.memo import ByIdentity
from factory.review.record import RECORD_SCHEMA, decode_record, state_canonical
from factory.review.results import result_hash
from factory.review.state import Invalidation, ReviewState, strictly_sorted
from factory.review.store import record_bytes, revision_of
from tests.review import builders as b


def _states() -> list[ReviewState]:
    s = b.started(level="high")
    per_lens: dict[str, list[dict[str, Any]]] = {
        lens: [b.finding("src/app/auth.py:3", claim=f"{lens}: the token is logged, ünïcode")]
        for lens in s.lenses
    }
    recorded = b.record_all(s, per_lens)
    return [s, recorded, machine.apply(recorded, machine.CompleteReview(None))]


def _reference_bytes(state: ReviewState) -> bytes:
    value = state.to_json_value()
    revision = digest_plain(STATE_TAG, value)
    doc: dict[str, Any] = {"schema": RECORD_SCHEMA, "revision": revision, "state": value}
    return rfc8785.dumps(doc) + b"\n"


def test_record_bytes_are_rfc8785_of_the_whole_record() -> None:
    for state in _states():
        data, revision = record_bytes(state)
        assert data == _reference_bytes(state)
        assert revision == digest_plain(STATE_TAG, state.to_json_value())
        assert decode_record(state.lineage_id, data) == (state, revision)


def test_a_state_the_reference_refuses_is_refused_by_record_bytes_too() -> None:
    big = b.started().model_copy(update={"changed_lines": 2**60})  # beyond ±(2^53 − 1)
    with pytest.raises(rfc8785.IntegerDomainError):
        rfc8785.dumps(big.to_json_value())
    with pytest.raises(FactoryError, match="safe integer"):
        record_bytes(big)


def test_the_remembered_revision_belongs_to_that_very_state() -> None:
    s = b.started()
    first = revision_of(s)
    twin = ReviewState.model_validate_json(s.model_dump_json(by_alias=True))
    assert twin is not s and revision_of(twin) == first
    moved = machine.apply(s, machine.Abandon(None))
    assert revision_of(moved) != first
    assert revision_of(moved) == digest_plain(STATE_TAG, moved.to_json_value())
    for _ in range(40):  # far more states than are remembered: each still right
        other = s.model_copy(update={"changed_files": s.changed_files})
        assert revision_of(other) == first


def test_a_lens_results_hash_over_one_dump_equals_the_per_finding_hash() -> None:
    recorded = _states()[1]
    for r in recorded.lens_results:
        assert r.result_hash == result_hash(r.lens, r.order, r.binding, r.findings, r.evidence)


paths = st.lists(st.text(alphabet="ab/._", max_size=4), max_size=8).map(tuple)


@settings(max_examples=300, deadline=None)
@given(paths)
def test_strictly_sorted_is_sorted_and_unique(items: tuple[str, ...]) -> None:
    assert strictly_sorted(items) == (list(items) == sorted(set(items)))


def test_lists_of_plain_leaves_still_reach_the_reference_for_what_it_must_decide() -> None:
    with pytest.raises(FactoryError, match="safe integer"):  # found inside a nested list
        canonical_bytes_plain({"a": ["x", True, None, ["y", 2**60]]})
    value: Any = {"a": ["x", None, False], "b": ["y", 1.5]}
    assert canonical_bytes_plain(value) == rfc8785.dumps(value)


def test_by_identity_answers_only_for_the_very_object() -> None:
    memo: ByIdentity[object, str] = ByIdentity(2)
    a, a_twin, c = [1, 2], [1, 2], [3]
    memo.put(a, "a")
    assert memo.get(a) == "a" and memo.get(a_twin) is None
    memo.put(a_twin, "twin")
    memo.put(c, "c")  # over the size: forgets, never answers for another object
    assert memo.get(c) == "c" and memo.get(a) in (None, "a") and memo.get(a_twin) in (None, "twin")


def test_an_invalid_state_is_checked_every_time_and_a_valid_one_once_per_object() -> None:
    valid = _states()[2]
    assert state_problems(valid) == [] and state_problems(valid) == []
    forged = valid.model_copy(update={"genesis_paths": (*valid.genesis_paths, "zzz.py")})
    problems = state_problems(forged)
    assert problems
    for _ in range(3):
        assert state_problems(forged) == problems
    twin = ReviewState.model_validate_json(forged.model_dump_json(by_alias=True))
    assert state_problems(twin) == problems


def test_the_row_fields_are_every_field_of_their_models() -> None:
    assert tuple(Classification.model_fields) == CLASSIFICATION_FIELDS
    assert tuple(OutcomeEntry.model_fields) == OUTCOME_FIELDS
    assert tuple(FollowUp.model_fields) == FOLLOW_UP_FIELDS


def _reviews() -> list[ReviewState]:
    s = b.started(level="high")
    genesis = s.genesis_paths[0]
    kinds: list[dict[str, Any]] = [
        {"severity": "WARNING", "evidence_class": None, "causal": None},
        {"evidence_class": "deterministic"},
        {"evidence_class": "insufficient"},
        {"evidence_class": "deterministic", "causal": "pre-existing"},
        {"evidence_class": "deterministic", "causal": "base-only"},
    ]
    per_lens: dict[str, list[dict[str, Any]]] = {
        lens: [
            b.finding(f"{genesis}:{i + 1}", claim=f"{lens} {i}", **k) for i, k in enumerate(kinds)
        ]
        + [b.finding("outside/the/genesis.py:4", claim=f"{lens} outside")]
        for lens in s.lenses
    }
    return [machine.apply(b.record_all(s, per_lens), machine.CompleteReview(None))]


def test_rederives_is_admit_equals_the_review_and_sees_each_edit() -> None:
    for s in _reviews():
        review = s.review
        assert review is not None and review.classifications and review.follow_ups
        assert review.outcomes and {o.outcome for o in review.outcomes} > {"info"}
        inputs = (s.findings(), s.genesis_paths, None)
        assert admit(*inputs) == review and rederives(review, *inputs)
        c0, o0, f0 = review.classifications[0], review.outcomes[-1], review.follow_ups[0]
        edits: list[dict[str, Any]] = [
            {
                "classifications": (
                    c0.model_copy(update={"location_admitted": not c0.location_admitted}),
                    *review.classifications[1:],
                )
            },
            {"classifications": review.classifications[1:]},
            {
                "outcomes": (
                    *review.outcomes[:-1],
                    o0.model_copy(update={"outcome": "corroborated"}),
                )
            },
            {
                "follow_ups": (
                    f0.model_copy(update={"observation": "another"}),
                    *review.follow_ups[1:],
                )
            },
            {"fix_finding_ids": (*review.fix_finding_ids, "R9-001")},
            {"refuter_hash": "sha256:" + "0" * 64},
        ]
        for update in edits:
            edited = review.model_copy(update=update)
            assert (admit(*inputs) == edited) is False
            assert rederives(edited, *inputs) is False, update


def test_keys_are_seen_non_ascii_whether_raw_or_escaped() -> None:
    for doc in (b'{"\\u00e9":1}', '{"é":1}'.encode(), b'{"a":{"\\u00e9":[1]}}'):
        assert strict_json_plain(doc, what="doc", limit=100)[1] is False, doc
    for doc in (b'{"a":{"b":["\\u00e9"]}}', b'{"a":1}', '{"a":"é"}'.encode()):
        assert strict_json_plain(doc, what="doc", limit=100)[1] is True, doc


def test_a_state_assembled_member_by_member_is_rfc8785_of_the_whole_state() -> None:
    states = _states()
    assert states[0].initial_snapshot is states[-1].initial_snapshot  # shared, encoded once
    for state in states:
        assert state_canonical(state) == rfc8785.dumps(state.to_json_value())
    changed = states[-1].model_copy(update={"genesis_paths": ("a.py", "ü/b.py")})
    assert state_canonical(changed) == rfc8785.dumps(changed.to_json_value())
    for name, field in ReviewState.model_fields.items():  # why a name needs no escaping
        key = field.alias or name
        assert key.isascii() and key.isidentifier()


texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(genesis=st.lists(texts, max_size=6).map(tuple), policy=texts, reason=texts)
def test_any_member_text_assembles_to_rfc8785_of_the_whole_state(
    genesis: tuple[str, ...], policy: str, reason: str
) -> None:
    """Control characters, quotes, backslashes, non-ASCII and astral text in a shared
    member (the genesis paths) and in members encoded each time (the policy hash, the
    invalidation reason); a shared snapshot reused from another state."""
    base = _states()[-1]
    state = base.model_copy(
        update={
            "genesis_paths": genesis,
            "policy_hash": policy,
            "invalidation": Invalidation(reason=reason),
        }
    )
    assert state_canonical(state) == rfc8785.dumps(state.to_json_value())
