"""Canonical bytes and domain-separated digests: the one writer (SPEC F-4).

* Canonical JSON is RFC 8785 (JCS) through the ``rfc8785`` package: keys sorted by UTF-16
  code units, no insignificant whitespace, ECMAScript number formatting.
* A structure digest is ``sha256(tag || 0x00 || canonical_bytes)`` rendered
  ``sha256:<64 hex>``. The tag separates domains, so the same body hashed as a receipt and
  as a bus event can never collide by construction.
* A *file* digest is the plain SHA-256 of its bytes (bare hex), so anyone can re-check it
  with ``sha256sum``; no tag is involved.

Schema ids follow ``factory.<name>/<n>``; :func:`schema_id` checks the convention.
Reading JSON that anyone else may read too, :func:`unique_keys` refuses an object that
names a key twice (:class:`DuplicateKey`); the strict reader itself is
:mod:`factory.documents.reading`. Stdlib plus ``rfc8785`` only: the review hook path
imports this module and must stay free of pydantic.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import rfc8785

from factory.errors import FactoryError

SHA256_PREFIX = "sha256:"
_SCHEMA_ID = re.compile(r"^factory\.[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*/[1-9][0-9]*$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class DuplicateKey(ValueError):
    """A JSON object names one key twice. Parsers disagree on which value wins, so the
    document means no one thing; ``key`` is the repeated name."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads`: the object as a dict, or
    :class:`DuplicateKey` (a ``ValueError``) when a key repeats."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON of ``value`` (dicts, lists, str, int, float, bool, None).

    Raises:
        FactoryError: (internal) when the value holds something JSON cannot express,
            such as NaN or a non-string key; that is a bug in the caller.
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise FactoryError(f"value is not canonicalisable JSON: {exc}") from exc


#: RFC 8785 writes numbers as IEEE doubles: ``rfc8785`` refuses integers beyond ±(2^53 - 1).
MAX_SAFE_INT = (1 << 53) - 1
_LEAVES = frozenset({str, bool, type(None)})
_COMPACT = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False,
    check_circular=False,
)  # fmt: skip


def canonical_bytes_plain(value: Any, *, plain: bool = False) -> bytes:
    """:func:`canonical_bytes`, the same bytes for every value, faster for plain documents.

    For a value made only of dicts with ASCII string keys, lists (or tuples), strings,
    booleans, ``None`` and integers within ±(2^53 - 1), RFC 8785 and Python's compact
    sorted JSON write the same bytes: ASCII keys sort alike by code point and by UTF-16
    unit, both escape ``"``, ``\\`` and U+0000–U+001F the same way (``\\n``-style where
    one exists, else ``\\u00xx``) and nothing else, and such integers print alike. That
    path runs in C (a gate evaluation: about a seventh of the time; a 250 kB review state:
    ~14 ms less). Anything else — a float, a larger integer, a non-ASCII key, a lone
    surrogate — takes :func:`canonical_bytes` itself; a property test holds the two equal.

    ``plain=True``: the caller knows the value qualifies (it was decoded by
    :func:`factory.documents.reading.read_json_plain` and found plain), so the walk is
    skipped.
    """
    if plain or is_plain(value):
        try:
            return _COMPACT.encode(value).encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: let RFC 8785 decide
    return canonical_bytes(value)


def is_plain(value: Any) -> bool:
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


def exact_bytes(value: Any) -> bytes:
    """Compact JSON with sorted keys that writes ``Decimal`` and large ``int`` exactly.

    Not RFC 8785: it is for bytes that are hashed as written and never re-serialised (the
    gate's acquired observations); reading them back with
    :func:`factory.documents.reading.read_json` (``decimals=True``) gives equal values.
    """
    from decimal import Decimal  # here: the review hook path never writes decimals

    return _exact(value, Decimal).encode("utf-8")


def _exact(value: Any, decimal: type) -> str:
    if isinstance(value, decimal):
        return str(value)
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{_exact(v, decimal)}"
            for k, v in sorted(value.items())
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_exact(v, decimal) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def tagged_sha256(tag: str, payload: bytes) -> str:
    """``sha256:<hex>`` of ``tag`` (UTF-8), a NUL byte, then ``payload``.

    The tag must not contain NUL, otherwise two (tag, payload) pairs could share bytes.
    """
    if "\x00" in tag or not tag:
        raise FactoryError("a digest tag must be a non-empty string without NUL")
    h = hashlib.sha256()
    h.update(tag.encode("utf-8"))
    h.update(b"\x00")
    h.update(payload)
    return SHA256_PREFIX + h.hexdigest()


def digest(tag: str, value: Any) -> str:
    """Domain-separated digest of a JSON value's canonical bytes (SPEC F-4)."""
    return tagged_sha256(tag, canonical_bytes(value))


def digest_plain(tag: str, value: Any, *, plain: bool = False) -> str:
    """:func:`digest` through :func:`canonical_bytes_plain` (the same digest, faster)."""
    return tagged_sha256(tag, canonical_bytes_plain(value, plain=plain))


def sha256_hex(data: bytes) -> str:
    """Plain SHA-256 of ``data``, 64 lowercase hex digits (file and evidence digests)."""
    return hashlib.sha256(data).hexdigest()


def is_digest(text: str) -> bool:
    """True when ``text`` is exactly ``sha256:`` followed by 64 lowercase hex digits."""
    return bool(_DIGEST.fullmatch(text))


def schema_id(text: str) -> str:
    """Return ``text`` if it follows ``factory.<name>/<n>``; raise otherwise."""
    if not _SCHEMA_ID.fullmatch(text):
        raise FactoryError(f"not a factory schema id: {text!r}")
    return text
