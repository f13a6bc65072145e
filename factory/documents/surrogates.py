"""Whether a decoded JSON value holds a lone surrogate: a ``\\ud800`` escape decodes to a
code point no UTF-8 text can hold, so such a value can never be hashed, stored as text or
printed. Stdlib only (the bus's wire screen runs it on every suspicious line)."""

from __future__ import annotations

from typing import Any


def holds_lone_surrogate(value: Any) -> bool:
    """True when any string of ``value`` (keys included) holds a surrogate code point.
    Iterative: the caller of a parser controls the nesting depth, and recursion would let
    it crash us."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
