"""Talk to the scripted model over real loopback HTTP, as the CLIs would (test helper)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import trio

from factory.rehearsal import RehearsalSession


def request(
    base_url: str, method: str, path: str, body: object | None, headers: dict[str, str]
) -> tuple[int, bytes]:
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


async def call(
    session: RehearsalSession,
    method: str,
    path: str,
    body: object | None = None,
    headers: dict[str, str] | None = None,
    *,
    key: bool = True,
) -> tuple[int, bytes]:
    sent = dict(headers or {})
    if key:
        sent.setdefault("x-api-key", session.route.api_key)
    return await trio.to_thread.run_sync(request, session.route.base_url, method, path, body, sent)


def sse_events(raw: bytes) -> list[dict[str, object]]:
    events = []
    for frame in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "data" in lines:
            data = json.loads(lines["data"])
            assert data["type"] == lines["event"]
            events.append(data)
    return events


def claude_body(assistant_turns: int) -> dict[str, object]:
    messages: list[dict[str, object]] = [{"role": "user", "content": "task"}]
    for n in range(assistant_turns):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "Write", "input": {}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"result {n}"}
                ],
            }
        )
    return {
        "model": "m",
        "stream": True,
        "messages": messages,
        "tools": [{"name": "Write", "input_schema": {}}],
    }
