"""Pure wire formats of the scripted model: request inspection and SSE encoding (SPEC P-5).

Only the subset the pinned CLIs need is spoken (``design/rehearsal.md`` §Protocol):

* Anthropic Messages streaming (Claude Code 2.1.332): ``message_start``,
  ``content_block_start/delta/stop`` for one ``text`` or one ``tool_use`` block (the tool
  input sent as a single ``input_json_delta``), ``message_delta`` with ``stop_reason``,
  ``message_stop``.
* OpenAI Responses streaming (Codex 0.171.0): ``response.created``,
  ``response.output_item.added``, ``response.function_call_arguments.delta/done`` or
  ``response.content_part.added``/``response.output_text.delta/done``/
  ``response.content_part.done``, ``response.output_item.done``, ``response.completed``.

No function here does I/O; the server feeds request bodies in and writes the bytes out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from factory.rehearsal.scenario import CODEX_SHELL_FUNCTION, Invocation

__all__ = ["CODEX_SHELL_FUNCTION"]
MAX_EXCERPT_CHARS = 2048
"""Tool results kept as evidence are cut to this many characters."""


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {event}\ndata: {payload}\n\n".encode()


# --- request inspection ---------------------------------------------------------------------


def anthropic_session(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The Claude Code session a Messages request belongs to.

    Claude Code sends ``X-Claude-Code-Session-Id``; its ``metadata.user_id`` JSON carries the
    same ``session_id`` and is the fallback.
    """
    header = headers.get("x-claude-code-session-id")
    if header:
        return header
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        try:
            user = json.loads(metadata["user_id"])
        except json.JSONDecodeError:
            return None
        if isinstance(user, dict) and isinstance(user.get("session_id"), str):
            return str(user["session_id"])
    return None


def codex_session(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The Codex thread a Responses request belongs to (``session-id`` header, else
    ``prompt_cache_key``, which Codex sets to the thread id)."""
    for name in ("session-id", "session_id", "thread-id"):
        if headers.get(name):
            return headers[name]
    key = body.get("prompt_cache_key")
    return key if isinstance(key, str) and key else None


def anthropic_turn(body: Mapping[str, Any]) -> int:
    """Which turn of its conversation a Messages request asks for: the number of assistant
    messages already in ``messages`` (a retried request asks for the same turn again)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def codex_turn(body: Mapping[str, Any]) -> int:
    """Which turn a Responses request asks for: the number of ``function_call`` items in
    ``input`` (each scripted tool turn leaves exactly one; requests are stateless)."""
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(1 for it in items if isinstance(it, dict) and it.get("type") == "function_call")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def anthropic_last_tool_result(body: Mapping[str, Any]) -> str | None:
    """Text of the newest ``tool_result`` block the CLI sent back, cut to
    :data:`MAX_EXCERPT_CHARS`; ``None`` when the request carries none."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    # Newest first, back to the last assistant turn: Claude may append messages after the
    # tool result (e.g. a ``system`` budget note with --max-budget-usd).
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") == "assistant":
            return None
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = _text_of(block.get("content"))
                prefix = "[is_error] " if block.get("is_error") else ""
                return (prefix + text)[:MAX_EXCERPT_CHARS]
    return None


def codex_last_tool_result(body: Mapping[str, Any]) -> str | None:
    """Output of the newest ``function_call_output`` item, cut to :data:`MAX_EXCERPT_CHARS`."""
    items = body.get("input")
    if not isinstance(items, list):
        return None
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text_of(output)
            return text[:MAX_EXCERPT_CHARS]
    return None


def tool_names(body: Mapping[str, Any]) -> tuple[str, ...]:
    """Names of the tools a request offers the model (either API)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return ()
    return tuple(str(t["name"]) for t in tools if isinstance(t, dict) and "name" in t)


# --- Anthropic Messages stream --------------------------------------------------------------


def anthropic_stream(invocation: Invocation, turn: int, *, tag: str, model: str) -> bytes:
    """SSE body answering ``turn`` of ``invocation`` (Anthropic Messages streaming).

    ``tag`` makes message and tool-use ids unique per invocation and turn.
    """
    message: dict[str, Any] = {
        "id": f"msg_{tag}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }
    events = [_sse("message_start", {"type": "message_start", "message": message})]
    if turn < len(invocation.tool_calls):
        call = invocation.tool_calls[turn]
        block = {"type": "tool_use", "id": f"toolu_{tag}", "name": call.wire_name(), "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call.tool_input())}
        stop_reason = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": invocation.final_message}
        stop_reason = "end_turn"
    events += [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(events)


def anthropic_plain_text(text: str, *, tag: str, model: str) -> bytes:
    """A one-text-block reply for requests outside the script (no tools offered)."""
    return anthropic_stream(Invocation(role="worker", final_message=text), 0, tag=tag, model=model)


def anthropic_error(kind: str, message: str) -> bytes:
    """JSON error body in the Messages API's shape."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


# --- OpenAI Responses stream ----------------------------------------------------------------


def _numbered(events: Iterable[tuple[str, dict[str, Any]]]) -> bytes:
    out = []
    for seq, (name, data) in enumerate(events):
        out.append(_sse(name, {"type": name, "sequence_number": seq, **data}))
    return b"".join(out)


def responses_stream(invocation: Invocation, turn: int, *, tag: str, model: str) -> bytes:
    """SSE body answering ``turn`` of ``invocation`` (OpenAI Responses streaming)."""
    response: dict[str, Any] = {
        "id": f"resp_{tag}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "in_progress",
        "output": [],
    }
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": response})]
    if turn < len(invocation.tool_calls):
        call = invocation.tool_calls[turn]
        arguments = json.dumps(call.tool_input())
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{tag}",
            "call_id": f"call_{tag}",
            "name": call.wire_name(),
            "arguments": "",
            "status": "in_progress",
        }
        done = {**item, "arguments": arguments, "status": "completed"}
        events += [
            ("response.output_item.added", {"output_index": 0, "item": item}),
            (
                "response.function_call_arguments.delta",
                {"item_id": item["id"], "output_index": 0, "delta": arguments},
            ),
            (
                "response.function_call_arguments.done",
                {"item_id": item["id"], "output_index": 0, "arguments": arguments},
            ),
        ]
    else:
        text = invocation.final_message
        item = {
            "type": "message",
            "id": f"msg_{tag}",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        done = {**item, "status": "completed", "content": [{**part, "text": text}]}
        events += [
            ("response.output_item.added", {"output_index": 0, "item": item}),
            ("response.content_part.added", {**where, "part": part}),
            ("response.output_text.delta", {**where, "delta": text}),
            ("response.output_text.done", {**where, "text": text}),
            ("response.content_part.done", {**where, "part": {**part, "text": text}}),
        ]
    events += [
        ("response.output_item.done", {"output_index": 0, "item": done}),
        (
            "response.completed",
            {"response": {**response, "status": "completed", "output": [done], "usage": usage}},
        ),
    ]
    return _numbered(events)


def responses_error(code: str, message: str) -> bytes:
    """JSON error body in the OpenAI API's shape."""
    return json.dumps({"error": {"type": code, "code": code, "message": message}}).encode()
