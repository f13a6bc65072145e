"""The fast canonical path is RFC 8785 exactly (property test against the reference package)."""

from __future__ import annotations

from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from factory.documents.canonical import canonical_bytes_plain

keys = st.text(max_size=8)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.text(max_size=12)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_equals_rfc8785(value: Any) -> None:
    try:
        expected = rfc8785.dumps(value)
    except Exception:
        try:
            canonical_bytes_plain(value)
        except Exception:
            return
        raise AssertionError("the fast path accepted what RFC 8785 refuses") from None
    assert canonical_bytes_plain(value) == expected


def test_floats_and_non_ascii_keys_take_the_reference_path() -> None:
    assert canonical_bytes_plain({"é": 1, "a": 1.5}) == rfc8785.dumps({"é": 1, "a": 1.5})
    assert canonical_bytes_plain({"\U0001f600": 1, "\ue000": 2}) == rfc8785.dumps(
        {"\U0001f600": 1, "\ue000": 2}
    )


documents = st.recursive(
    leaves | st.floats(allow_nan=False, allow_infinity=False) | st.integers(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_a_value_decoded_as_plain_takes_the_fast_path_correctly(value: object) -> None:
    import json

    from factory.review.documents import strict_json_plain

    try:
        data = json.dumps(value).encode()
        decoded, plain = strict_json_plain(data, what="doc", limit=1 << 20)
    except Exception:
        return
    if plain:
        assert canonical_bytes_plain(decoded, plain=True) == rfc8785.dumps(decoded)
