"""Screening of the MCP stdio wire before the SDK parses it (SPEC B-2).

The SDK decodes stdin with ``errors="replace"`` and drops a line its JSON parser refuses
without answering. Two kinds of ``tools/call`` would therefore slip past the bus's record:

* bytes that are not UTF-8 inside a string: the SDK turns them into U+FFFD and the message
  would be stored with text its sender never wrote (a silent repair);
* a string holding a lone surrogate escape (``"\\ud800"``, valid JSON grammar, not
  Unicode): the SDK's parser refuses the line and the caller waits forever for an answer.

Two more kinds of request were never answered, or answered ambiguously:

* a key given twice (``"name":"\\ud800","name":"b"``, or two ``params`` objects): JSON
  parsers disagree on which one counts, and the SDK's either refused the line silently or
  took the last one;
* nesting deeper than the SDK's parser allows: the line was dropped without an answer.

:func:`screen_line` rewrites exactly those calls into a well-formed ``tools/call`` with the
same ``id`` and tool name whose only argument is :data:`MALFORMED_KEY`; the handler then
records ``command.rejected`` (reason ``malformed-text``, ``duplicate-key`` or
``request-too-deep``) and returns a tool error. Another request (not a tool call) that
repeats a key or nests too deeply becomes a call of the method
``factory/refused-<reason>``: the SDK answers it with a JSON-RPC "method not found" error
for the same ``id`` whose ``data`` names the reason. Every other line passes through byte
for byte, so the SDK's behaviour for it is unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Final

from factory.canonical import DuplicateKey, unique_keys

MALFORMED_KEY: Final = "\x00factory-malformed-request"
"""Argument key that marks a refused call (see module doc): ``True`` for text that was not
valid Unicode, else the reason (``duplicate-key``, ``request-too-deep``)."""

_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _has_surrogate(value: Any) -> bool:
    # Iterative: a caller controls the nesting depth, and recursion would let it crash us.
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


def screen_line(raw: bytes) -> bytes:
    """One stdin line (with its LF, if any) as the SDK should read it.

    Pure. Returns ``raw`` itself unless it is a JSON-RPC request with a usable ``id`` that
    the SDK would drop or read ambiguously: a ``tools/call`` whose strings are not valid
    Unicode, or any request that repeats a key or nests deeper than :data:`MAX_DEPTH`. A
    ``tools/call`` is replaced by one LF-terminated canonical call carrying only
    :data:`MALFORMED_KEY` (its value names the reason); another request by a call of the
    method ``factory/refused-<reason>``, which the SDK answers with a JSON-RPC error for
    that ``id``.
    """
    try:
        text = raw.decode("utf-8")
        suspect = bool(_SURROGATE_ESCAPE.search(text))  # cheap: most lines have none
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")  # bad bytes become lone surrogates
        suspect = True
    try:
        value: Any = json.loads(text, object_pairs_hook=unique_keys)
        reason = "request-too-deep" if _too_deep(value) else None
    except DuplicateKey:  # parsers disagree on which wins: it means no one thing
        reason, value = "duplicate-key", None
    except RecursionError:
        reason, value = "request-too-deep", None
    except ValueError:
        return raw  # not JSON: the SDK answers or drops it as before
    if reason is None:
        if not (suspect and _has_surrogate(value)):
            return raw  # the common case
        reason = "malformed-text"
    head = _top_level(text) if value is None else value
    if not isinstance(head, dict) or head.get("jsonrpc") != "2.0":
        return raw
    ident = head.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int | str) or _has_surrogate(ident):
        return raw  # nothing to answer to: the SDK drops it as before
    method = head.get("method")
    if method == "tools/call":
        return _marked_call(ident, _tool_name(text, value), reason)
    if reason != "malformed-text" and isinstance(method, str):
        request = {"jsonrpc": "2.0", "id": ident, "method": f"factory/refused-{reason}"}
        return json.dumps(request, sort_keys=True).encode("ascii") + b"\n"
    return raw


def _marked_call(ident: int | str, name: str, reason: str) -> bytes:
    marker: bool | str = True if reason == "malformed-text" else reason
    request = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": name, "arguments": {MALFORMED_KEY: marker}},
    }
    return json.dumps(request, sort_keys=True).encode("ascii") + b"\n"


def _tool_name(text: str, value: Any) -> str:
    """The tool a refused call named, when it can be read without ambiguity."""
    if value is None:  # a repeated key or too deep: read the last word only if shallow
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return "(malformed)"
    params = value.get("params") if isinstance(value, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) and not _has_surrogate(name) else "(malformed)"


MAX_DEPTH: Final = 64
"""Nesting no verb's input needs (a call is about five levels deep); deeper is refused, not
handed to a parser whose own limit would drop it without an answer."""


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')


def _top_level(text: str) -> dict[str, Any] | None:
    """``jsonrpc``, ``id`` and ``method`` of a JSON object that cannot be parsed whole (too
    deep) or means two things (a repeated key), read token by token at the top level only.
    A repeated ``id`` or ``method`` gives None: there is no one request to answer."""
    out: dict[str, Any] = {}
    depth, key, expect_key = 0, None, False
    for match in _TOKEN.finditer(text):
        tok = match.group()
        if tok in ("{", "["):
            depth += 1
            expect_key = depth == 1 and tok == "{"
            key = None if depth > 1 else key
        elif tok in ("}", "]"):
            depth -= 1
            if depth <= 0:
                break
        elif depth != 1 or tok == ":":
            continue
        elif tok == ",":
            expect_key, key = True, None
        elif expect_key:
            key, expect_key = (tok[1:-1] if tok.startswith('"') else None), False
        elif key in ("jsonrpc", "id", "method"):
            if key in out:
                return None
            try:
                out[key] = json.loads(tok)
            except ValueError:
                return None
            key = None
    return out


def interpose_on_stdin() -> Callable[[], None]:
    """Make fd 0 a pipe fed by a daemon thread that copies the real stdin through
    :func:`screen_line`; EOF on the real stdin closes the pipe (the SDK then stops).

    Returns ``stop``: it ends the SDK's input now, as EOF would, even while the copy is
    blocked reading a terminal. The pipe's write end is replaced by ``/dev/null`` in place
    (``dup2``), never closed, so its descriptor number cannot be reused by another file
    (the event log) while the copy thread still holds it.
    """
    source = os.fdopen(os.dup(0), "rb")
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def stop() -> None:
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.dup2(null, write_end)  # the pipe's last write end is gone: the reader sees EOF
        finally:
            os.close(null)

    def pump() -> None:
        # A reader that went away (server shutting down) ends the copy quietly.
        with contextlib.suppress(OSError, ValueError), source, os.fdopen(write_end, "wb") as sink:
            for raw in source:
                try:
                    line = screen_line(raw)
                except Exception:  # never let the screen end the session: pass the line on
                    line = raw
                sink.write(line)
                sink.flush()

    threading.Thread(target=pump, name="factory-stdin-screen", daemon=True).start()
    return stop
