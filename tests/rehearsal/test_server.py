"""The scripted model over real loopback HTTP, without the CLIs."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio

from factory.errors import ExitCode
from factory.rehearsal import (
    NonLoopbackRefused,
    RehearsalIncomplete,
    open_rehearsal,
    parse_scenario,
)
from tests.rehearsal.http_client import call, claude_body, request, sse_events

SCENARIO = parse_scenario(
    json.dumps(
        {
            "schema": "factory.rehearsal-scenario/1",
            "invocations": [
                {
                    "role": "worker",
                    "tool_calls": [{"tool": "Write", "file_path": "a.txt", "content": "A\n"}],
                    "final_message": "worked",
                },
                {
                    "role": "reviewer",
                    "tool_calls": [{"tool": "shell", "command": "cat a.txt"}],
                    "final_message": '{"verdict":"APPROVE","summary":"ok"}',
                },
                {"role": "repair", "final_message": "repaired"},
            ],
        }
    ).encode()
)


def codex_body(calls: int) -> dict[str, object]:
    items: list[dict[str, object]] = [{"type": "message", "role": "user", "content": []}]
    for n in range(calls):
        items.append(
            {"type": "function_call", "call_id": f"c{n}", "name": "exec_command", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{n}", "output": f"out {n}"})
    return {"model": "gpt", "stream": True, "input": items, "tools": [{"name": "exec_command"}]}


async def test_full_script_is_served_and_consumed(tmp_path: Path) -> None:
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        route = session.route
        assert route.base_url.startswith("http://127.0.0.1:")
        assert (route.config_root / "claude").is_dir() and (route.config_root / "codex").is_dir()
        claude = {"x-claude-code-session-id": "s-worker"}
        status, raw = await call(session, "POST", "/v1/messages?beta=true", claude_body(0), claude)
        assert status == 200
        events = sse_events(raw)
        assert [e["type"] for e in events] == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        assert events[1]["content_block"] == {
            "type": "tool_use",
            "id": "toolu_r0t0",
            "name": "Write",
            "input": {},
        }
        delta = events[2]["delta"]
        assert isinstance(delta, dict)
        assert json.loads(delta["partial_json"]) == {"file_path": "a.txt", "content": "A\n"}
        assert events[4]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
        # a retry of turn 0 gets the same answer; turn 1 is the final text
        assert (await call(session, "POST", "/v1/messages", claude_body(0), claude))[1] == raw
        status, raw = await call(session, "POST", "/v1/messages", claude_body(1), claude)
        final = sse_events(raw)
        assert final[2]["delta"] == {"type": "text_delta", "text": "worked"}
        assert final[4]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
        assert session.problems() == (
            "invocation 1 (reviewer) served turns [] of 2",
            "invocation 2 (repair) served turns [] of 1",
        )
        with pytest.raises(RehearsalIncomplete) as caught:
            session.check_consumed()
        assert caught.value.exit_code == ExitCode.FAILURE

        codex = {"session-id": "s-review", "authorization": f"Bearer {route.api_key}"}
        status, raw = await call(session, "POST", "/v1/responses", codex_body(0), codex, key=False)
        events = sse_events(raw)
        assert events[0]["type"] == "response.created"
        assert events[-1]["type"] == "response.completed"
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        done = next(e for e in events if e["type"] == "response.output_item.done")["item"]
        assert isinstance(done, dict)
        assert done["name"] == "exec_command" and json.loads(done["arguments"]) == {
            "cmd": "cat a.txt"
        }
        status, raw = await call(session, "POST", "/v1/responses", codex_body(1), codex, key=False)
        texts = [e for e in sse_events(raw) if e["type"] == "response.output_text.done"]
        assert texts[0]["text"] == '{"verdict":"APPROVE","summary":"ok"}'

        repair = {"x-claude-code-session-id": "s-repair"}
        status, raw = await call(session, "POST", "/v1/messages", claude_body(0), repair)
        assert sse_events(raw)[2]["delta"] == {"type": "text_delta", "text": "repaired"}
        session.check_consumed()
        log = session.evidence()

    assert [p.session for p in log.progress] == ["s-worker", "s-review", "s-repair"]
    scripted = [r for r in log.requests if r.outcome == "scripted"]
    assert [(r.invocation, r.turn) for r in scripted] == [
        (0, 0),
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 0),
    ]
    assert scripted[2].tool_result == "result 0"
    assert scripted[4].tool_result == "out 0"
    assert all(r.authorized for r in log.requests)
    assert all(not {"x-api-key", "authorization"} & set(r.headers) for r in log.requests)
    assert log.problems == ()
    assert route.api_key not in log.model_dump_json()
    assert route.api_key.encode() not in log.canonical()
    assert log.to_json_value()["schema"] == "factory.rehearsal-log/1"


async def test_requests_outside_the_script_are_violations(tmp_path: Path) -> None:
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        body = claude_body(0)
        assert (await call(session, "POST", "/v1/messages", body, key=False))[0] == 401
        assert (
            await call(session, "POST", "/v1/messages", body, {"x-api-key": "rehearsal-wrong"})
        )[0] == 401
        assert (await call(session, "POST", "/v1/messages", body))[0] == 400  # no session id
        ok = {"x-claude-code-session-id": "a"}
        assert (await call(session, "POST", "/v1/messages", claude_body(5), ok))[0] == 400
        assert (
            await call(
                session, "POST", "/v1/messages", claude_body(0), {"x-claude-code-session-id": "b"}
            )
        )[0] == 200
        status, raw = await call(
            session, "POST", "/v1/messages", claude_body(0), {"x-claude-code-session-id": "c"}
        )
        assert status == 400 and b"only 2 for that API" in raw
        problems = session.problems()
    assert problems == (
        "/v1/messages: request without the rehearsal key",
        "/v1/messages: request without the rehearsal key",
        "anthropic request carries no session id; cannot match it",
        "invocation 0 asked for turn 5 but has only 2",
        "anthropic conversation #3 but the scenario has only 2 for that API",
        "invocation 0 (worker) served turns [] of 2",
        "invocation 1 (reviewer) served turns [] of 2",
    )


async def test_startup_and_auxiliary_endpoints_answer_without_consuming(tmp_path: Path) -> None:
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        assert (await call(session, "HEAD", "/api/hello"))[0] == 200
        status, raw = await call(session, "GET", "/v1/models")
        assert status == 200 and json.loads(raw)["data"] == []
        status, raw = await call(session, "POST", "/v1/messages/count_tokens", {"messages": []})
        assert json.loads(raw) == {"input_tokens": 1}
        status, raw = await call(
            session,
            "POST",
            "/v1/messages",
            {"model": "haiku", "messages": [{"role": "user", "content": "title?"}]},
        )
        assert sse_events(raw)[2]["delta"] == {"type": "text_delta", "text": "OK"}
        status, _ = await call(
            session, "GET", "/v1/responses", None, {"upgrade": "websocket", "connection": "Upgrade"}
        )
        assert status == 426
        assert (await call(session, "GET", "/elsewhere"))[0] == 404
        outcomes = [r.outcome for r in session.requests]
        progress = session.progress()
    assert outcomes == [
        "startup",
        "startup",
        "startup",
        "auxiliary",
        "websocket-refused",
        "not-found",
    ]
    assert all(p.served_turns == () for p in progress)


@pytest.mark.parametrize("host", ["0.0.0.0", "localhost", "::1", "127.0.0.2", "10.0.0.1"])
async def test_non_loopback_hosts_are_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(NonLoopbackRefused) as caught:
        async with open_rehearsal(SCENARIO, tmp_path / "route", host=host):
            raise AssertionError("must not start")
    assert caught.value.exit_code == ExitCode.USAGE
    assert not (tmp_path / "route").exists()


async def test_loopback_host_twin_starts_and_stops(tmp_path: Path) -> None:
    async with open_rehearsal(SCENARIO, tmp_path / "route", host="127.0.0.1") as session:
        base_url = session.route.base_url
        assert (await call(session, "HEAD", "/api/hello"))[0] == 200
    with pytest.raises(ConnectionRefusedError):
        await trio.to_thread.run_sync(request, base_url, "HEAD", "/api/hello", None, {})


async def test_each_run_mints_its_own_key(tmp_path: Path) -> None:
    async with (
        open_rehearsal(SCENARIO, tmp_path / "one") as one,
        open_rehearsal(SCENARIO, tmp_path / "two") as two,
    ):
        assert one.route.api_key != two.route.api_key
        assert one.route.base_url != two.route.base_url
        assert len(one.route.api_key) > 30


async def test_cancellation_still_stops_the_server(tmp_path: Path) -> None:
    seen: list[str] = []
    with trio.CancelScope() as scope:
        async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
            seen.append(session.route.base_url)
            scope.cancel()
            await trio.sleep(1)  # cancelled at once; the exit path must still stop it
    assert scope.cancelled_caught
    with pytest.raises(ConnectionRefusedError):
        await trio.to_thread.run_sync(request, seen[0], "HEAD", "/api/hello", None, {})


def _raw_post(base_url: str, path: str, headers: dict[str, str], chunks: list[bytes]) -> int:
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:
        conn.putrequest("POST", path)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        for chunk in chunks:
            conn.send(chunk)
        return conn.getresponse().status
    finally:
        conn.close()


async def test_chunked_and_gzip_bodies_are_decoded(tmp_path: Path) -> None:
    import gzip

    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        key = session.route.api_key
        body = json.dumps(claude_body(0)).encode()
        chunked = [
            b"%x\r\n%s\r\n" % (len(body[:100]), body[:100]),
            b"%x\r\n%s\r\n" % (len(body[100:]), body[100:]),
            b"0\r\n\r\n",
        ]
        status = await trio.to_thread.run_sync(
            _raw_post,
            session.route.base_url,
            "/v1/messages",
            {
                "x-api-key": key,
                "x-claude-code-session-id": "w",
                "transfer-encoding": "chunked",
                "content-type": "application/json",
            },
            chunked,
        )
        assert status == 200
        packed = gzip.compress(json.dumps(claude_body(1)).encode())
        status = await trio.to_thread.run_sync(
            _raw_post,
            session.route.base_url,
            "/v1/messages",
            {
                "x-api-key": key,
                "x-claude-code-session-id": "w",
                "content-encoding": "gzip",
                "content-length": str(len(packed)),
            },
            [packed],
        )
        assert status == 200
        progress = session.progress()[0]
        sizes = [r.body_bytes for r in session.requests]
    assert progress.served_turns == (0, 1)
    assert sizes[0] == len(body)  # decoded size, not the framing


async def test_oversized_and_unsupported_bodies_are_refused(tmp_path: Path) -> None:
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        base = session.route.base_url
        key = session.route.api_key
        status = await trio.to_thread.run_sync(
            _raw_post, base, "/v1/messages", {"x-api-key": key, "content-length": str(64 << 20)}, []
        )
        assert status == 413
        status = await trio.to_thread.run_sync(
            _raw_post,
            base,
            "/v1/messages",
            {"x-api-key": key, "content-encoding": "br", "content-length": "2"},
            [b"{}"],
        )
        assert status == 400
        outcomes = [r.outcome for r in session.requests]
        problems = session.problems()
    assert outcomes == ["too-large", "violation"]
    assert problems[:2] == (
        "/v1/messages: body over 33554432 bytes",
        "request body encoding 'br' is not supported",
    )
