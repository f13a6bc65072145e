"""Size limits shared by the bus schemas and the tracer's admission (no heavy imports).

Kept apart from :mod:`factory.bus.model` so ``factory smoke`` can check its ``--task``
before the pydantic schemas load (they load while the server starts).
"""

from __future__ import annotations

from typing import Final

MAX_TEXT_JSON_BYTES: Final = 61_440
"""Bytes a text or summary may take in its event line (RFC 8785: UTF-8, control characters
escaped, quotes included). The rest of a message event stays under 4 KiB, so every event a
verb can produce fits the log's 64 KiB line limit and is recorded instead of failing."""


def text_fits_one_line(text: str) -> str:
    """Validator for verb inputs: refuse a text whose JSON form exceeds the byte budget."""
    if len(text) * 6 + 2 <= MAX_TEXT_JSON_BYTES:  # no code point renders longer than \u001f
        return text
    import json

    if len(json.dumps(text, ensure_ascii=False).encode("utf-8")) > MAX_TEXT_JSON_BYTES:
        raise ValueError(f"takes more than {MAX_TEXT_JSON_BYTES} bytes as JSON; shorten it")
    return text
