"""Canonical bytes, tags and strict JSON reading for review documents (SPEC F-4).

The review store hashes large documents (a state with 500 findings is ~250 kB) on every
load. RFC 8785 through the ``rfc8785`` package costs ~14 ms for that; for the documents
this package builds — integers only (no floats), object keys ASCII — RFC 8785 is exactly
``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``: the same
escaping (``"``, ``\\``, C0 controls; lower-case ``\\u00xx``), no escaping of non-ASCII,
and for ASCII keys code-point order equals UTF-16 order. :func:`canonical` takes that fast
path only when a walk proves both conditions and otherwise defers to
:func:`factory.canonical.canonical_bytes`; a property test checks the two agree.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from factory.canonical import canonical_bytes, tagged_sha256
from factory.review.errors import ReviewInputInvalid

STATE_TAG = "factory.review-state/1"
PATHS_TAG = "factory.review-paths/1"
SNAPSHOT_TAG = "factory.review-snapshot/1"
BINDING_TAG = "factory.review-lens-binding/1"
LENS_RESULT_TAG = "factory.review-lens-result/1"
REFUTER_TAG = "factory.review-refuter-result/1"
CHECK_TAG = "factory.review-validator-check/1"
VALIDATION_TAG = "factory.review-validation/1"
POLICY_TAG = "factory.review-policy/1"
EVIDENCE_TAG = "factory.review-final-evidence/1"

#: The hash of no bytes: "no correction" / "no final evidence" (never a tagged digest).
EMPTY_HASH = "sha256:" + hashlib.sha256(b"").hexdigest()
MAX_SAFE_INT = (1 << 53) - 1
_LEAVES = frozenset({str, bool, type(None)})


def _fast_ok(value: Any) -> bool:
    """True when ``value`` holds only str, bool, None, safe ints, lists/tuples and dicts
    with ASCII keys (iterative: documents can be deep and large)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int:
            if not -MAX_SAFE_INT <= v <= MAX_SAFE_INT:
                return False
        elif t is dict:
            for k in v:
                if type(k) is not str or not k.isascii():
                    return False
            extend(v.values())
        elif t is list or t is tuple:
            if not set(map(type, v)) <= _LEAVES:  # a list of only strings needs no walk
                extend(v)
        else:
            return False  # floats and anything else: the reference implementation decides
        if len(stack) > 1_000_000:
            return False
    return True


def canonical(value: Any, *, plain: bool = False) -> bytes:
    """RFC 8785 bytes of ``value`` (fast path for integer-only, ASCII-key documents).

    ``plain=True``: the caller knows the value qualifies (it was decoded by
    :func:`strict_json_plain` and found plain), so the walk is skipped.
    """
    if plain or _fast_ok(value):
        try:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            return text.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: let the reference implementation refuse it
    return canonical_bytes(value)


def digest_of(tag: str, value: Any, *, plain: bool = False) -> str:
    """``sha256:<hex>`` over ``tag``, NUL, the canonical bytes of ``value``."""
    return tagged_sha256(tag, canonical(value, plain=plain))


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # some key repeats: name the first one that does
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(f"duplicate key {key!r}")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(data: bytes, *, what: str, limit: int) -> Any:
    """Decode one JSON value: UTF-8, no duplicate keys, no NaN/Infinity, nothing after it.

    Raises:
        ReviewInputInvalid: naming ``what`` and the first problem.
    """
    return strict_json_plain(data, what=what, limit=limit)[0]


def strict_json_plain(data: bytes, *, what: str, limit: int) -> tuple[Any, bool]:
    """:func:`strict_json`, and whether the value is *plain*: no float, no integer beyond
    ±(2^53 − 1), only ASCII object keys — so its canonical bytes take the fast path."""
    plain = [True]

    def on_float(text: str) -> float:
        plain[0] = False
        return float(text)

    def on_int(text: str) -> int:
        n = int(text)
        if not -MAX_SAFE_INT <= n <= MAX_SAFE_INT:
            plain[0] = False
        return n

    def on_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = _no_duplicates(pairs)
        if plain[0] and not "".join(out).isascii():
            plain[0] = False
        return out

    if len(data) > limit:
        raise ReviewInputInvalid(f"{what} is larger than {limit} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewInputInvalid(f"{what} is not UTF-8 text") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=on_object,
            parse_constant=_no_constant,
            parse_float=on_float,
            parse_int=on_int,
        )
        return value, plain[0]
    except _Duplicate as exc:
        raise ReviewInputInvalid(f"{what} is not strict JSON: {exc}") from None
    except RecursionError:  # hostile nesting: the decoder gives up at the recursion limit
        raise ReviewInputInvalid(f"{what} is not strict JSON: nested too deeply") from None
    except ValueError as exc:
        reason = str(exc).split(":")[0]
        raise ReviewInputInvalid(f"{what} is not one JSON value ({reason})") from None
