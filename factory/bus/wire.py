"""Screening of the MCP stdio wire before the SDK parses it (SPEC B-2).

The SDK decodes stdin with ``errors="replace"`` and drops a line its JSON parser refuses
without answering. Two kinds of ``tools/call`` would therefore slip past the bus's record:

* bytes that are not UTF-8 inside a string: the SDK turns them into U+FFFD and the message
  would be stored with text its sender never wrote (a silent repair);
* a string holding a lone surrogate escape (``"\\ud800"``, valid JSON grammar, not
  Unicode): the SDK's parser refuses the line and the caller waits forever for an answer.

:func:`screen_line` rewrites exactly those calls into a well-formed ``tools/call`` with the
same ``id`` and tool name whose only argument is :data:`MALFORMED_KEY`; the handler then
records ``command.rejected`` (reason ``malformed-text``) and returns a tool error. Every
other line passes through byte for byte, so the SDK's behaviour for it is unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Final

MALFORMED_KEY: Final = "\x00factory-malformed-request"
"""Argument key that marks a call whose text was not valid Unicode (see module doc)."""

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

    Pure. Returns ``raw`` itself unless it is a JSON-RPC ``tools/call`` with a usable
    ``id`` whose strings are not valid Unicode; that call is replaced by one LF-terminated
    canonical request carrying only :data:`MALFORMED_KEY` as its arguments.
    """
    try:
        if not _SURROGATE_ESCAPE.search(raw.decode("utf-8")):
            return raw  # the common case: UTF-8 and no surrogate escape at all
    except UnicodeDecodeError:
        pass
    try:
        value = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):  # too deep to parse: the SDK refuses it as before
        return raw
    if not (
        isinstance(value, dict)
        and value.get("jsonrpc") == "2.0"
        and value.get("method") == "tools/call"
        and isinstance(value.get("params"), dict)
        and _has_surrogate(value)
    ):
        return raw
    ident = value.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int | str) or _has_surrogate(ident):
        return raw  # nothing to answer to: the SDK drops it as before
    name = value["params"].get("name")
    request = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {
            "name": name if isinstance(name, str) and not _has_surrogate(name) else "(malformed)",
            "arguments": {MALFORMED_KEY: True},
        },
    }
    return json.dumps(request, sort_keys=True).encode("ascii") + b"\n"


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
