"""Strong Kleene tables, quorum corners, shapes refused at load, and property tests of the
algebra (Hypothesis): Kleene laws, quorum monotonicity, quorum as an ANY of ALLs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from factory.gate import logic
from factory.gate.errors import ScenarioInvalid
from factory.gate.logic import FAILED, FALSE, TRUE, UNKNOWN, k_and, k_not, k_or, quorum
from tests.gate.helpers import condition, scenario

T, F, U = TRUE, FALSE, UNKNOWN
V = (T, F, U)
truth = st.sampled_from(V)

AND_TABLE = {
    (T, T): T,
    (T, F): F,
    (T, U): U,
    (F, T): F,
    (F, F): F,
    (F, U): F,
    (U, T): U,
    (U, F): F,
    (U, U): U,
}
OR_TABLE = {
    (T, T): T,
    (T, F): T,
    (T, U): T,
    (F, T): T,
    (F, F): F,
    (F, U): U,
    (U, T): T,
    (U, F): U,
    (U, U): U,
}


@pytest.mark.parametrize(("a", "b"), list(itertools.product(V, V)))
def test_kleene_tables(a: str, b: str) -> None:
    assert k_and([a, b]) == AND_TABLE[a, b]
    assert k_or([a, b]) == OR_TABLE[a, b]


def test_not_and_empty_folds() -> None:
    assert [k_not(v) for v in V] == [F, T, U]
    assert k_and([]) == T and k_or([]) == F


@pytest.mark.parametrize(
    ("values", "k", "want"),
    [
        ([T, U, U], 2, U),
        ([T, F, F], 2, F),
        ([F, F], 0, T),
        ([T, T], 3, F),
        ([T, T, F], 2, T),
        ([U, U, U], 1, U),
        ([], 0, T),
    ],
)
def test_quorum_corners(values: list[str], k: int, want: str) -> None:
    assert quorum(k, values) == want


def test_every_leaf_is_traced_without_short_circuit() -> None:
    node = logic.parse({"all": ["a", {"any": ["b", "c"]}, {"not": "d"}]}, "x", allow_not=True)
    seen: list[str] = []

    def leaf(i: str) -> str:
        seen.append(i)
        return F if i == "a" else T

    value, trace = logic.trace(node, leaf)
    assert value == F and seen == ["a", "b", "c", "d"]
    assert trace["items"][0] == {"ref": "a", "result": F}


def test_a_failed_leaf_fails_the_law_even_when_others_decide_it() -> None:
    node = logic.parse({"any": ["a", "b"]}, "x", allow_not=True)
    assert logic.evaluate(node, lambda i: T if i == "a" else FAILED) == FAILED
    q = logic.parse({"quorum": {"k": 1, "of": ["a", "b", "c"]}}, "x", allow_not=True)
    assert logic.evaluate(q, lambda i: FAILED if i == "c" else T) == FAILED


@pytest.mark.parametrize(
    ("law", "match"),
    [
        ({"all": []}, "non-empty"),
        ({"any": []}, "non-empty"),
        ({"quorum": {"k": 3, "of": ["c1", "c2"]}}, "from 0 to 2"),
        ({"quorum": {"k": -1, "of": ["c1"]}}, "from 0 to 1"),
        ({"xor": ["c1"]}, "unknown operator"),
        ({"all": ["c1"], "any": ["c2"]}, "one of all/any"),
        ("nope", "not a declared condition"),
    ],
)
def test_bad_shapes_are_load_errors(law: object, match: str) -> None:
    with pytest.raises(ScenarioInvalid, match=match):
        scenario([condition("c1"), condition("c2")], [{"id": "s", "complete": law}])


def test_depth_beyond_the_cap_is_a_load_error() -> None:
    law: object = "c1"
    for _ in range(logic.MAX_DEPTH):
        law = {"not": law}
    with pytest.raises(ScenarioInvalid, match="nest at most"):
        scenario([condition("c1")], [{"id": "s", "complete": law}])


def test_a_zero_condition_stage_is_refused() -> None:
    with pytest.raises(ScenarioInvalid, match="a requirement is an id"):
        scenario([condition("c1")], [{"id": "s"}])


# -- properties --------------------------------------------------------------------------


@given(truth, truth)
def test_commutative(a: str, b: str) -> None:
    assert k_and([a, b]) == k_and([b, a]) and k_or([a, b]) == k_or([b, a])


@given(truth, truth, truth)
def test_associative_and_distributive(a: str, b: str, c: str) -> None:
    assert k_and([k_and([a, b]), c]) == k_and([a, k_and([b, c])]) == k_and([a, b, c])
    assert k_or([k_or([a, b]), c]) == k_or([a, k_or([b, c])]) == k_or([a, b, c])
    assert k_and([a, k_or([b, c])]) == k_or([k_and([a, b]), k_and([a, c])])
    assert k_or([a, k_and([b, c])]) == k_and([k_or([a, b]), k_or([a, c])])


@given(truth, truth)
def test_de_morgan_double_negation_absorption(a: str, b: str) -> None:
    assert k_not(k_and([a, b])) == k_or([k_not(a), k_not(b)])
    assert k_not(k_or([a, b])) == k_and([k_not(a), k_not(b)])
    assert k_not(k_not(a)) == a
    assert k_and([a, k_or([a, b])]) == a and k_or([a, k_and([a, b])]) == a


@given(truth)
def test_identities_and_no_excluded_middle_for_unknown(a: str) -> None:
    assert k_and([a, T]) == a and k_or([a, F]) == a
    assert k_and([a, F]) == F and k_or([a, T]) == T
    assert k_or([a, k_not(a)]) == (U if a == U else T)


ORDER = {F: 0, U: 1, T: 2}  # the truth order F < U < T


@given(st.lists(truth, max_size=8), st.integers(0, 9), st.data())
def test_quorum_is_monotone_in_the_truth_order(
    values: list[str], k: int, data: st.DataObject
) -> None:
    if not values:
        return
    i = data.draw(st.integers(0, len(values) - 1))
    raised = list(values)
    raised[i] = data.draw(st.sampled_from([v for v in V if ORDER[v] >= ORDER[values[i]]]))
    assert ORDER[quorum(k, raised)] >= ORDER[quorum(k, values)]
    if k < 9:
        assert ORDER[quorum(k + 1, values)] <= ORDER[quorum(k, values)]


@given(st.lists(truth, min_size=1, max_size=6), st.integers(0, 6))
def test_quorum_equals_the_any_of_all_k_subsets(values: list[str], k: int) -> None:
    if k > len(values):
        return
    expansion = k_or([k_and(list(c)) for c in itertools.combinations(values, k)]) if k else T
    assert quorum(k, values) == expansion


@given(st.lists(truth, min_size=1, max_size=6))
def test_unknown_is_preserved_when_undecided(values: list[str]) -> None:
    if U in values and F not in values:
        assert k_and(values) == U
    if U in values and T not in values:
        assert k_or(values) == U
