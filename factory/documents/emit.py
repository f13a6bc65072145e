"""The one JSON emitter for what factory prints: hostile code points leave escaped.

``json.dumps(..., ensure_ascii=False)`` keeps every non-ASCII character raw, so a title
holding U+202E, an isolate, a zero-width joiner, a line separator, a C1 control or DEL
reached the terminal as itself. :func:`inert_json` rewrites exactly the characters the
display sanitiser (:mod:`factory.display`) would escape as JSON ``\\uXXXX`` escapes
(astral ones as a surrogate pair). Outside strings JSON text is ASCII, so the rewrite
only touches string contents: the result is valid JSON that parses to the same strings.
Ordinary non-ASCII text ("é", "日本") stays readable.

Hash-bound canonical bytes (RFC 8785, :mod:`factory.documents.canonical`) are not rewritten where
they are stored: the files keep their exact bytes. What goes to stdout for a person is
the escaped form, which parses to the same value. Stdlib only, so the hook path stays
free of pydantic.
"""

from __future__ import annotations

import json

from factory.display import needs_escape


def _json_escape(char: str) -> str:
    point = ord(char)
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def inert_json(text: str) -> str:
    """JSON text with every hostile code point written as an escape (same parsed value)."""
    return "".join(_json_escape(c) if ord(c) >= 0x7F and needs_escape(c) else c for c in text)


def json_line(value: object, *, indent: int | None = None, sort_keys: bool = False) -> bytes:
    """``value`` as one inert JSON document plus a newline, UTF-8 encoded."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
    return (inert_json(text) + "\n").encode("utf-8")


def inert_bytes(data: bytes) -> bytes:
    """Already-serialised UTF-8 JSON bytes (canonical form) made inert for printing."""
    return inert_json(data.decode("utf-8", "surrogatepass")).encode("utf-8")
