"""RFC 8785 canonical bytes and domain-separated digests (SPEC F-4)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factory.documents.canonical import (
    canonical_bytes,
    canonical_bytes_plain,
    digest,
    is_digest,
    schema_id,
    sha256_hex,
    tagged_sha256,
)
from factory.errors import FactoryError


def test_keys_sorted_by_utf16_code_units_rfc8785_vector() -> None:
    # RFC 8785 §3.2.3: the emoji (surrogate 0xD83D) sorts before U+FB33, which code-point
    # order would put first.
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    out = canonical_bytes(value).decode("utf-8")
    keys_in_order = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    shown = ["\\r" if k == "\r" else k for k in keys_in_order]
    pairs = zip(shown, keys_in_order, strict=True)
    expected = "{" + ",".join(f'"{k}":"{value[o]}"' for k, o in pairs) + "}"
    assert out == expected
    # Code-point order would differ (U+FB33 before U+1F600):
    assert sorted(value) != keys_in_order


def test_number_formatting_rfc8785_vector() -> None:
    numbers = [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001]
    assert canonical_bytes({"numbers": numbers}) == (
        b'{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}'
    )
    assert canonical_bytes([1e21, 1e20, -0.0, 0.1 + 0.2]) == (
        b"[1e+21,100000000000000000000,0,0.30000000000000004]"
    )


def test_literals_strings_and_no_whitespace() -> None:
    assert canonical_bytes({"b": [True, False, None], "a": {}}) == (
        b'{"a":{},"b":[true,false,null]}'
    )
    assert canonical_bytes("\u20ac$\u000f\nA'B\"\\/") == (b'"\xe2\x82\xac$\\u000f\\nA\'B\\"\\\\/"')


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, object(), 2**60])
def test_uncanonicalisable_values_raise_typed_error(bad: object) -> None:
    with pytest.raises(FactoryError):
        canonical_bytes(bad)


def test_digest_is_tag_nul_canonical_bytes() -> None:
    body = {"b": 1, "a": "x"}
    expected = hashlib.sha256(b"factory.receipt/1\x00" + b'{"a":"x","b":1}').hexdigest()
    assert digest("factory.receipt/1", body) == "sha256:" + expected
    assert is_digest(digest("factory.receipt/1", body))


def test_same_body_different_tags_differ() -> None:
    body = {"k": [1, 2, 3]}
    assert digest("factory.receipt/1", body) != digest("factory.bus-event/1", body)
    # Key order of the input never matters; only the canonical bytes do.
    assert digest("t", {"a": 1, "b": 2}) == digest("t", {"b": 2, "a": 1})


def test_tag_with_nul_or_empty_is_refused_and_twin_succeeds() -> None:
    with pytest.raises(FactoryError):
        tagged_sha256("a\x00b", b"payload")
    with pytest.raises(FactoryError):
        tagged_sha256("", b"payload")
    assert is_digest(tagged_sha256("ab", b"payload"))


def test_nul_is_what_keeps_tag_and_body_apart() -> None:
    # Without a separator ("ab", "c") and ("a", "bc") would hash the same bytes.
    assert tagged_sha256("ab", b"c") != tagged_sha256("a", b"bc")


def test_sha256_hex_is_plain_file_digest() -> None:
    assert sha256_hex(b"") == ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("sha256:" + "0" * 64, True),
        ("sha256:" + "A" * 64, False),
        ("sha256:" + "0" * 63, False),
        ("sha1:" + "0" * 64, False),
        ("0" * 64, False),
    ],
)
def test_is_digest(text: str, ok: bool) -> None:
    assert is_digest(text) is ok


def test_schema_id_convention() -> None:
    assert schema_id("factory.receipt/1") == "factory.receipt/1"
    assert schema_id("factory.review.lens-result/12") == "factory.review.lens-result/12"
    for bad in ["factory.receipt", "factory.Receipt/1", "gaia.receipt/1", "factory.x/0"]:
        with pytest.raises(FactoryError):
            schema_id(bad)


def test_unique_keys_refuses_a_repeated_key_and_names_it() -> None:
    import json

    from factory.documents.canonical import DuplicateKey, unique_keys

    with pytest.raises(DuplicateKey, match="duplicate key 'a'") as caught:
        json.loads('{"b": 1, "a": 1, "a": 2}', object_pairs_hook=unique_keys)
    assert caught.value.key == "a" and isinstance(caught.value, ValueError)
    # twin: the same keys, each once, nested too
    assert json.loads('{"a": {"a": 1}, "b": 2}', object_pairs_hook=unique_keys) == {
        "a": {"a": 1},
        "b": 2,
    }


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_KEYS = st.text(max_size=4) | st.sampled_from(["a", "b", "\u00e9", "\U0001f600", "\ufb33"])
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


def _either(encode: Any, value: Any) -> bytes | str:
    try:
        return bytes(encode(value))
    except FactoryError:
        return "refused"


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_the_plain_path_writes_exactly_the_rfc8785_bytes(value: Any) -> None:
    # Its shortcut (compact sorted json) is taken only where RFC 8785 writes the same
    # bytes; floats, big integers, non-ASCII keys and lone surrogates take RFC 8785 itself.
    assert _either(canonical_bytes_plain, value) == _either(canonical_bytes, value)


@pytest.mark.parametrize(
    "value",
    [
        {"b": [True, None, 1, -7], "a": 'x\n\u2028\x7f\x01"\\'},
        {"\U0001f600": 1, "\ufb33": 2},  # UTF-16 order differs from code-point order
        {"n": 2**53 - 1, "m": -(2**53) + 1},
        {"f": 1.0, "g": 1e21},
    ],
)
def test_the_plain_path_on_the_corner_cases(value: Any) -> None:
    assert canonical_bytes_plain(value) == canonical_bytes(value)


def test_the_plain_path_refuses_what_rfc8785_refuses() -> None:
    for bad in (2**53, {"k": "\ud800"}):
        with pytest.raises(FactoryError):
            canonical_bytes(bad)
        with pytest.raises(FactoryError):
            canonical_bytes_plain(bad)
