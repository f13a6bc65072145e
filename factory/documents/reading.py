"""The one strict JSON reader for documents anyone else may have written (hostile by default).

* the text must be UTF-8 and at most the caller's ``limit`` long (checked before decoding);
* a key repeated in one object is refused (parsers disagree on which value wins);
* ``NaN``, ``Infinity`` and ``-Infinity`` are refused (not JSON numbers);
* nesting deeper than ``max_depth`` is refused, and nesting too deep for Python's parser
  is a refusal too, never a ``RecursionError``;
* a string holding a lone surrogate (``"\\ud800"``) is refused unless the caller keeps
  its own, later check (``lone_surrogates=True``): such text can never be hashed or shown;
* numbers with a fraction or exponent decode as ``float`` or, with ``decimals=True``, as
  ``Decimal`` (exact; the decision gate's values), integers as ``int``.

Every refusal is one :class:`JsonRefused` (a ``ValueError``) whose ``reason`` says which
rule failed and whose ``str`` says why; a subsystem that words refusals its own way (the
review's ``ReviewInputInvalid``) renders it from those fields, so there is one parser.

:func:`read_own` is for bytes factory wrote itself (histories, indexes, markers): plain
``json.loads``, where only hostile nesting becomes a :class:`JsonRefused`.

Stdlib only: the review hook path imports this module and must stay free of pydantic.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from factory.documents.canonical import MAX_SAFE_INT
from factory.documents.surrogates import holds_lone_surrogate

MAX_DEPTH = 32

Reason = Literal["size", "utf8", "duplicate", "constant", "depth", "surrogate", "syntax"]


class JsonRefused(ValueError):
    """The bytes are not a JSON document factory accepts; ``str(self)`` says why.

    ``reason`` names the rule; ``detail`` is the repeated key (``duplicate``), the constant
    (``constant``), the parser's message (``syntax``) or ``""``; ``limit`` is the size or
    depth limit that was passed (``size``/``depth``; ``None`` when Python's parser gave up).
    """

    def __init__(
        self, message: str, *, reason: Reason, detail: str = "", limit: int | None = None
    ) -> None:
        super().__init__(message)
        self.reason: Reason = reason
        self.detail = detail
        self.limit = limit


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _Constant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # some key repeats: name the first one that does
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise _Constant(name)


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


def read_json(
    data: bytes | str,
    *,
    limit: int,
    max_depth: int | None = MAX_DEPTH,
    decimals: bool = False,
    lone_surrogates: bool = False,
) -> Any:
    """Decode ``data`` strictly (see the module docstring); :class:`JsonRefused` otherwise.

    ``max_depth=None`` leaves only Python's own nesting limit (a refusal too).
    """
    return _read(data, limit, max_depth, decimals, lone_surrogates, track=False)[0]


def read_json_plain(
    data: bytes | str, *, limit: int, max_depth: int | None = None, lone_surrogates: bool = False
) -> tuple[Any, bool]:
    """:func:`read_json`, and whether the value is *plain*: no float, no integer beyond
    ±(2^53 − 1), only ASCII object keys — so its canonical bytes take the fast path of
    :func:`factory.documents.canonical.canonical_bytes_plain` (``plain=True``)."""
    return _read(data, limit, max_depth, False, lone_surrogates, track=True)


def _read(
    data: bytes | str,
    limit: int,
    max_depth: int | None,
    decimals: bool,
    lone_surrogates: bool,
    *,
    track: bool,
) -> tuple[Any, bool]:
    if len(data) > limit:
        raise JsonRefused(f"larger than {limit} bytes", reason="size", limit=limit)
    if isinstance(data, bytes):
        # ASCII bytes without a \u escape decode to ASCII strings only: no key needs a look.
        ascii_only = data.isascii() and b"\\u" not in data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise JsonRefused("not UTF-8 text", reason="utf8") from None
    else:
        text, ascii_only = data, data.isascii() and "\\u" not in data
    plain = [True]
    hooks: dict[str, Any] = {"object_pairs_hook": _no_duplicates, "parse_constant": _no_constant}
    if decimals:  # imported here: the review hook path never reads decimals
        from decimal import Decimal

        hooks["parse_float"] = Decimal
    if track:
        hooks.update(_plain_hooks(plain, ascii_only))
    value = _decode(text, hooks, max_depth)
    if max_depth is not None and depth_of(value) > max_depth:
        raise JsonRefused(f"nested deeper than {max_depth} levels", reason="depth", limit=max_depth)
    if not lone_surrogates and not ascii_only and holds_lone_surrogate(value):
        raise JsonRefused("a string holds a lone surrogate", reason="surrogate")
    return value, plain[0]


def _decode(text: str, hooks: dict[str, Any], max_depth: int | None) -> Any:
    try:
        return json.loads(text, **hooks)
    except _Duplicate as exc:
        message = f"key {exc.key!r} appears twice in one object"
        raise JsonRefused(message, reason="duplicate", detail=exc.key) from None
    except _Constant as exc:
        message = f"{exc.name} is not a JSON number"
        raise JsonRefused(message, reason="constant", detail=exc.name) from None
    except RecursionError:  # hostile nesting: the decoder gives up at the recursion limit
        where = "too deeply" if max_depth is None else f"deeper than {max_depth} levels"
        raise JsonRefused(f"nested {where}", reason="depth", limit=max_depth) from None
    except ValueError as exc:
        raise JsonRefused(f"not JSON ({exc})", reason="syntax", detail=str(exc)) from None


def _plain_hooks(plain: list[bool], ascii_only: bool) -> dict[str, Any]:
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
        if plain[0] and not ascii_only and not "".join(out).isascii():
            plain[0] = False
        return out

    return {"parse_float": on_float, "parse_int": on_int, "object_pairs_hook": on_object}


def read_own(data: bytes | str) -> Any:
    """``json.loads`` for bytes factory wrote itself (history, indexes, markers), where the
    strict rules of :func:`read_json` would change what was written; only nesting too deep
    for Python's parser becomes :class:`JsonRefused` (a ``ValueError``), so a hostile
    document meets the caller's own "does not parse" handling instead of a
    ``RecursionError`` escaping as an internal error."""
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise JsonRefused("nested too deeply to parse", reason="depth") from exc
