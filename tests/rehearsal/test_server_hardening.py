"""Hostile requests to the scripted model and a pre-filled config root (SPEC P-5), found in
the issue-4 review. Each refusal has a twin that is served."""

from __future__ import annotations

import json
import socket
import stat
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio

from factory.errors import ExitCode
from factory.rehearsal import ConfigRootNotEmpty, open_rehearsal, parse_scenario
from factory.rehearsal import server as server_mod

SCENARIO = parse_scenario(
    json.dumps(
        {
            "schema": "factory.rehearsal-scenario/1",
            "invocations": [{"role": "worker", "final_message": "done"}],
        }
    ).encode()
)
BODY = json.dumps(
    {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "Write", "input_schema": {}}],
    }
).encode()


def _post(base_url: str, headers: dict[str, str], body: bytes) -> bytes:
    """Raw HTTP/1.1 POST; returns the status line (or b"timeout" if none within 3 s)."""
    parts = urlsplit(base_url)
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=3) as sock:
        head = (
            "POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            + "\r\n"
        )
        sock.sendall(head.encode("latin-1") + body)
        try:
            return sock.recv(64).split(b"\r\n")[0]
        except TimeoutError:
            return b"timeout"


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


async def test_gzip_body_inflating_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "MAX_REQUEST_BYTES", 1 << 20)
    bomb = _gzip(b"\0" * ((1 << 20) + 1))
    fits = _gzip(BODY)
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        base, key = session.route.base_url, session.route.api_key
        refused = await trio.to_thread.run_sync(
            _post, base, {"content-encoding": "gzip", "content-length": str(len(bomb))}, bomb
        )
        served = await trio.to_thread.run_sync(
            _post,
            base,
            {
                "x-api-key": key,
                "x-claude-code-session-id": "s",
                "content-encoding": "gzip",
                "content-length": str(len(fits)),
            },
            fits,
        )
        outcomes = [r.outcome for r in session.requests]
    assert len(bomb) < 2048 and refused == b"HTTP/1.1 413 Request Entity Too Large"
    assert served == b"HTTP/1.1 200 OK"
    assert outcomes == ["too-large", "scripted"]


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"content-length": "-1"}, b""),
        ({"content-length": "12abc"}, b""),
        ({"content-length": "\u00b2"}, b""),
        ({"transfer-encoding": "chunked"}, b"-5\r\nhello\r\n0\r\n\r\n"),
    ],
)
async def test_malformed_lengths_are_answered_not_left_hanging(
    tmp_path: Path, headers: dict[str, str], body: bytes
) -> None:
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        status = await trio.to_thread.run_sync(_post, session.route.base_url, headers, body)
        outcomes = [r.outcome for r in session.requests]
    assert status == b"HTTP/1.1 400 Bad Request"
    assert outcomes == ["violation"]


async def test_prefilled_config_root_is_refused(tmp_path: Path) -> None:
    # Claude reads <root>/claude/settings.json; its "env" block would override the
    # injected endpoint and key (observed with Claude Code 2.1.332).
    root = tmp_path / "route"
    (root / "claude").mkdir(parents=True)
    (root / "claude" / "settings.json").write_text('{"env": {"ANTHROPIC_BASE_URL": "x"}}')
    with pytest.raises(ConfigRootNotEmpty) as info:
        async with open_rehearsal(SCENARIO, root):
            pass
    assert info.value.exit_code == ExitCode.USAGE
    assert info.value.code == "rehearsal-config-root-not-empty"
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigRootNotEmpty):
        async with open_rehearsal(SCENARIO, tmp_path / "file"):
            pass


async def test_new_or_empty_config_root_twin_is_used_and_made_private(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    for root in (empty, tmp_path / "new" / "route"):
        async with open_rehearsal(SCENARIO, root) as session:
            assert session.route.config_root == root
            assert (root / "claude").is_dir() and (root / "codex").is_dir()
        assert stat.S_IMODE(root.stat().st_mode) == 0o700


async def test_a_deeply_nested_body_is_a_violation_not_a_python_message(tmp_path: Path) -> None:
    """Issue 8 §7: nesting past the parser's limit is answered 400 as a script violation
    whose note names it, never the interpreter's RecursionError text; twin: the same
    request with an ordinary body is served."""
    deep = b'{"model":"m","messages":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    async with open_rehearsal(SCENARIO, tmp_path / "route") as session:
        base, key = session.route.base_url, session.route.api_key
        statuses = []
        for body in (deep, BODY):
            headers = {
                "x-api-key": key,
                "x-claude-code-session-id": "s",
                "content-length": str(len(body)),
            }
            statuses.append(await trio.to_thread.run_sync(_post, base, headers, body))
        records = list(session.requests)
    assert statuses == [b"HTTP/1.1 400 Bad Request", b"HTTP/1.1 200 OK"]
    assert [r.outcome for r in records] == ["violation", "scripted"]
    assert "nested too deeply" in (records[0].note or "")
    assert "Recursion" not in (records[0].note or "")
