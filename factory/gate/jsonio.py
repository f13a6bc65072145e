"""Strict, bounded JSON decoding for everything the gate admits (hostile by default).

* numbers with a fraction or exponent decode as ``Decimal`` (never a binary float), integers
  as ``int``; ``NaN`` and ``Infinity`` are refused;
* a key repeated in one object is refused (the last one would silently win);
* nesting deeper than :data:`MAX_DEPTH` and documents larger than the caller's cap are
  refused; text must be UTF-8.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from factory.canonical import DuplicateKey, unique_keys

MAX_DEPTH = 32


class JsonRefused(ValueError):
    """The bytes are not a JSON document the gate accepts; ``str(self)`` says why."""


def _constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not a JSON number")


def depth_of(value: Any) -> int:
    """Nesting depth of a decoded JSON value (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        stack.extend((child, level) for child in children)
    return deepest


def loads(data: bytes | str, *, limit: int, max_depth: int = MAX_DEPTH) -> Any:
    """Decode ``data`` strictly (see the module docstring); :class:`JsonRefused` otherwise."""
    if len(data) > limit:
        raise JsonRefused(f"larger than {limit} bytes")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(
            text, parse_float=Decimal, parse_constant=_constant, object_pairs_hook=unique_keys
        )
    except JsonRefused:
        raise
    except DuplicateKey as exc:
        raise JsonRefused(f"key {exc.key!r} appears twice in one object") from exc
    except UnicodeDecodeError as exc:
        raise JsonRefused("not UTF-8 text") from exc
    except RecursionError as exc:
        raise JsonRefused(f"nested deeper than {max_depth} levels") from exc
    except ValueError as exc:
        raise JsonRefused(f"not JSON ({exc})") from exc
    if depth_of(value) > max_depth:
        raise JsonRefused(f"nested deeper than {max_depth} levels")
    return value


def plain_loads(data: bytes | str) -> Any:
    """``json.loads`` for bytes the gate wrote itself (history, indexes, markers), where the
    strict rules of :func:`loads` would change what was written; only nesting too deep for
    Python's parser is turned into :class:`JsonRefused` (a ``ValueError``), so a hostile
    document meets the caller's own "does not parse" handling instead of a
    ``RecursionError`` escaping as an internal error."""
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise JsonRefused("nested too deeply to parse") from exc


def dumps(value: Any) -> bytes:
    """Compact JSON with sorted keys that writes ``Decimal`` and large ``int`` exactly.

    Used for the bytes of acquired observations (hashed as written, never re-serialised);
    decoding them with :func:`loads` gives back equal values.
    """
    return _dump(value).encode("utf-8")


def _dump(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{_dump(v)}" for k, v in sorted(value.items())
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)
