"""A real ``factory bus serve`` child driven line by line over its pipes (MCP stdio framing:
one JSON-RPC message per line), for tests of what the wire answers."""

from __future__ import annotations

import json
import select
import subprocess
from pathlib import Path
from typing import Any

from factory.bus.spawn import server_argv, server_env

INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
HANDSHAKE = (
    json.dumps(INIT).encode() + b'\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


class LiveServer:
    """One ``factory bus serve`` child for ``data_dir``, past the MCP handshake."""

    def __init__(self, data_dir: Path) -> None:
        self.proc = subprocess.Popen(
            server_argv(data_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(),
        )
        self.send(HANDSHAKE)
        assert "result" in self.answer()

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        """The next line the server writes, as JSON (30 s at most)."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        assert ready, "no answer"
        value: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return value

    def ask(self, line: bytes) -> dict[str, Any]:
        self.send(line)
        return self.answer()

    def close(self) -> int:
        """Close stdin; the exit code, once the server wrote nothing more."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        assert self.proc.stdout.read() == b"", "an answer nobody asked for"
        return code


def serve_once(data_dir: Path, payload: bytes) -> list[dict[str, Any]]:
    """Write the handshake and ``payload``, close stdin at once; every answer after the
    handshake's, once the server exited 0."""
    proc = subprocess.run(
        server_argv(data_dir),
        input=HANDSHAKE + payload,
        capture_output=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(x) for x in proc.stdout.splitlines()][1:]
