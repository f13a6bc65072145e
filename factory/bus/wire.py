"""Screening of the MCP stdio wire before the SDK parses it (SPEC B-2).

The SDK decodes stdin with ``errors="replace"`` and drops a line its JSON parser refuses
without answering. Two kinds of ``tools/call`` would therefore slip past the bus's record:

* bytes that are not UTF-8 inside a string: the SDK turns them into U+FFFD and the message
  would be stored with text its sender never wrote (a silent repair);
* a string holding a lone surrogate escape (``"\\ud800"``, valid JSON grammar, not
  Unicode): the SDK's parser refuses the line and the caller waits forever for an answer.

Two more kinds of request were never answered, or answered ambiguously:

* a key given twice, at any level (``"method"`` twice, two ``params`` objects, a repeated
  ``id``, ``"name":"\\ud800","name":"b"``): JSON parsers disagree on which one counts, and
  the SDK's either refused the line silently or took the last one;
* nesting deeper than the SDK's parser allows: the line was dropped without an answer.

:func:`screen_line` refuses the first outright: it returns a :class:`WireRefusal`, which
the transport (:mod:`factory.bus.stdio`) answers with a JSON-RPC ``-32600`` error for the
request's ``id`` when exactly one can be read, else for ``id: null``; the SDK never sees
the line, so nothing is executed or recorded. The other calls it rewrites into a
well-formed ``tools/call`` with the same ``id`` and tool name whose only argument is
:data:`MALFORMED_KEY`; the handler then records ``command.rejected`` (reason
``malformed-text`` or ``request-too-deep``) and returns a tool error. Another request (not
a tool call) that nests too deeply becomes a call of the method
``factory/refused-request-too-deep``: the SDK answers it with a JSON-RPC "method not found"
error for the same ``id`` whose ``data`` names the reason. Every other line passes through
byte for byte, so the SDK's behaviour for it is unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

from factory.documents.surrogates import holds_lone_surrogate

MALFORMED_KEY: Final = "\x00factory-malformed-request"
"""Argument key that marks a refused call (see module doc): ``True`` for text that was not
valid Unicode, else the reason (``duplicate-key`` inside a call's arguments,
``request-too-deep``)."""

INVALID_REQUEST: Final = -32600
"""JSON-RPC 2.0's "Invalid Request" code: what a request that repeats a key gets."""


@dataclass(frozen=True, slots=True)
class WireRefusal:
    """A line refused before the SDK reads it: the transport answers it with a JSON-RPC
    error for ``ident`` (``None``: no one id could be read, answered as ``id: null``)."""

    ident: int | str | None
    reason: str

    def error(self) -> dict[str, Any]:
        """The JSON-RPC error object (``code``, ``message``, ``data``) for this refusal."""
        return {
            "code": INVALID_REQUEST,
            "message": "Invalid Request: a key is given twice, so the request means no one "
            "thing (JSON parsers disagree on which counts); send each key once",
            "data": f"factory/refused-{self.reason}",
        }


_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _has_surrogate(value: Any) -> bool:
    return holds_lone_surrogate(value)


def screen_line(raw: bytes) -> bytes | WireRefusal:
    """One stdin line (with its LF, if any) as the SDK should read it, or its refusal.

    Pure. A line that is JSON and repeats a key anywhere is a :class:`WireRefusal`. Else
    returns ``raw`` itself unless it is a JSON-RPC request with a usable ``id`` that the
    SDK would drop or misread: a ``tools/call`` whose strings are not valid Unicode, or any
    request that nests deeper than :data:`MAX_DEPTH`. A ``tools/call`` is replaced by one
    LF-terminated canonical call carrying only :data:`MALFORMED_KEY` (its value names the
    reason); another request by a call of the method ``factory/refused-<reason>``, which
    the SDK answers with a JSON-RPC error for that ``id``.
    """
    try:
        text = raw.decode("utf-8")
        suspect = bool(_SURROGATE_ESCAPE.search(text))  # cheap: most lines have none
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")  # bad bytes become lone surrogates
        suspect = True
    try:
        value, repeated = _parse(text)
        reason = "request-too-deep" if _too_deep(value) else None
    except RecursionError:
        reason, value, repeated = "request-too-deep", None, None
    except ValueError:
        return raw  # not JSON: the SDK answers or drops it as before
    if repeated is not None:  # parsers disagree on which wins: it means no one thing
        if _in_envelope(value, repeated):
            return WireRefusal(_refusal_id(value, repeated), "duplicate-key")
        reason = "duplicate-key"  # only inside a call's arguments: recorded (issue 8 §7)
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


class _Object(dict[str, Any]):
    """A parsed object that repeated keys, and which (read by :func:`_in_envelope`)."""

    def __init__(self, pairs: list[tuple[str, Any]], repeated: frozenset[str]) -> None:
        super().__init__(pairs)
        self.repeated = repeated


def _parse(text: str) -> tuple[Any, frozenset[str] | None]:
    """The JSON value of ``text`` (a repeated key: its last value, only ever read for the
    ``id``) and the keys its top-level object repeats; ``None`` when no object at any level
    repeats a key. Raises ``ValueError`` (not JSON) or ``RecursionError``."""
    found: list[frozenset[str]] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        counts = Counter(key for key, _ in pairs)
        repeats = frozenset(key for key, n in counts.items() if n > 1)
        found.append(repeats)
        return _Object(pairs, repeats) if repeats else dict(pairs)

    value = json.loads(text, object_pairs_hook=hook)
    if not any(found):
        return value, None
    # An object's hook runs after its members': the top-level object's comes last.
    return value, found[-1] if isinstance(value, dict) else frozenset()


def _in_envelope(value: Any, repeated: frozenset[str]) -> bool:
    """Whether a repeated key is part of the request itself (its top-level object, or a
    ``tools/call``'s ``params`` object: the method, id, tool name…), rather than only inside
    the arguments of a call, which the handler records as ``command.rejected``."""
    if repeated or not isinstance(value, dict) or value.get("method") != "tools/call":
        return True
    params = value.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return True
    return bool(getattr(params, "repeated", frozenset()))


def _refusal_id(value: Any, repeated: frozenset[str]) -> int | str | None:
    """The id to answer a refused request for: its one top-level ``id``, else None."""
    if not isinstance(value, dict) or "id" in repeated:
        return None
    ident = value.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int | str) or _has_surrogate(ident):
        return None
    return ident


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
    if value is None:  # too deep: read it only if the plain parser can
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
    deep), read token by token at the top level only. A repeated ``id`` or ``method``
    gives None: there is no one request to answer."""
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


def interpose_on_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """Copy the real stdin, line by line, into a pipe fed by a daemon thread; EOF on the real
    stdin closes the pipe. Fd 0 then points at ``/dev/null`` (a handler reads nothing).

    Returns the pipe's read end (the transport's input, screened there with
    :func:`screen_line`) and ``stop``: it ends that input now, as EOF would, even while the
    copy is blocked reading a terminal. The pipe's write end is replaced by ``/dev/null`` in
    place (``dup2``), never closed, so its descriptor number cannot be reused by another
    file (the event log) while the copy thread still holds it.
    """
    source = os.fdopen(os.dup(0), "rb")
    read_end, write_end = os.pipe()
    null_in = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null_in, 0)
    finally:
        os.close(null_in)

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
                sink.write(raw)
                sink.flush()

    threading.Thread(target=pump, name="factory-stdin-copy", daemon=True).start()
    return os.fdopen(read_end, "rb"), stop
