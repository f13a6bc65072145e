"""The scripted loopback model server (SPEC P-5).

A stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` and an ephemeral port, run in a daemon
thread so it keeps answering while the factory's trio loop awaits the CLI subprocess. It
serves HTTP/1.1 with ``Content-Length`` bodies (each SSE stream is produced whole, then
sent), so keep-alive clients (Bun, reqwest) need no chunked decoding on their side.

Routing (everything else: 404, recorded):

=========================  =================================================================
``POST /v1/messages``       Anthropic Messages stream; scripted for requests offering tools,
                            a plain one-line text for requests without tools (auxiliary)
``POST /v1/messages/count_tokens``  ``{"input_tokens": 1}``
``POST /v1/responses``      OpenAI Responses stream; always scripted
``GET /v1/models``          an empty model list
``HEAD|GET /api/hello``     200 (Claude Code's start-up connectivity probe)
=========================  =================================================================

Matching requests to invocations is :class:`factory.rehearsal.book.ScriptBook`'s job.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from factory.documents.canonical import sha256_hex
from factory.errors import Refused
from factory.rehearsal import wire
from factory.rehearsal.book import Api, RehearsalRequest, ScriptBook, ScriptViolation

LOOPBACK_HOST = "127.0.0.1"
MAX_REQUEST_BYTES = 32 << 20
"""Largest request body accepted (bytes); the CLIs send ~100 KiB per turn."""
IDLE_TIMEOUT_S = 1800.0
"""A keep-alive connection idle this long is closed (seconds). Longer than the longest
invocation deadline (SPEC A: 1 800 000 ms): a CLI whose pooled connection we closed
during a long tool run might fail its next request instead of reconnecting, and the
profiles allow it no retries on this route."""
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "proxy-authorization", "cookie"})


class NonLoopbackRefused(Refused):
    """Asked to bind the scripted model anywhere but 127.0.0.1 (exit 2)."""


NOT_LOOPBACK = NonLoopbackRefused.define(
    "rehearsal-not-loopback",
    "drop the host override: the scripted model binds 127.0.0.1 only",
    default=True,
)


def require_loopback(host: str) -> str:
    """Return ``host`` if it is exactly the IPv4 loopback address, else refuse.

    Raises:
        NonLoopbackRefused: any other address or name (``0.0.0.0``, ``localhost``, ``::1``).
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or str(address) != LOOPBACK_HOST:
        raise NonLoopbackRefused(f"the scripted model binds only {LOOPBACK_HOST}, not {host!r}")
    return host


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S
    server: _ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the request log is the evidence, stderr is not ours to write."""

    # stdlib dispatches on do_<METHOD>
    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _read_body(self) -> bytes | None:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks, total = [], 0
            while True:
                token = self.rfile.readline().split(b";")[0].strip() or b"0"
                if token.strip(b"0123456789abcdefABCDEF"):  # e.g. "-5": read(-5) blocks
                    raise ScriptViolation(f"invalid chunk size {token[:40]!r}")
                size = int(token, 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_REQUEST_BYTES:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        else:
            declared = (self.headers.get("content-length") or "0").strip()
            if not (declared.isascii() and declared.isdigit()):  # "-1": read blocks to EOF
                raise ScriptViolation(f"invalid content-length {declared[:40]!r}")
            length = int(declared)
            if length > MAX_REQUEST_BYTES:
                return None
            raw = self.rfile.read(length) if length else b""
        encoding = self.headers.get("content-encoding", "identity").lower()
        if encoding in ("gzip", "deflate"):
            # Bounded: a 32 MiB gzip body of zeros would otherwise inflate to ~32 GiB.
            inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
            raw = inflater.decompress(raw, MAX_REQUEST_BYTES + 1)
            if len(raw) > MAX_REQUEST_BYTES:
                return None
        elif encoding not in ("identity", ""):
            raise ScriptViolation(f"request body encoding {encoding!r} is not supported")
        return raw

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        if status >= 400:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self) -> None:
        book = self.server.book
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        record: dict[str, Any] = {
            "method": self.command,
            "path": self.path,
            "headers": {k: v for k, v in headers.items() if k not in _SECRET_HEADERS},
            "authorized": self._authorized(headers),
        }
        status, body, ctype = 404, b"", "application/json"
        try:
            raw = self._read_body()
            if raw is None:
                book.violate(f"{path}: body over {MAX_REQUEST_BYTES} bytes")
                record.update(body_sha256="", body_bytes=-1, outcome="too-large")
                status, body = 413, wire.anthropic_error("request_too_large", "body too large")
                return
            record.update(body_sha256=sha256_hex(raw), body_bytes=len(raw))
            status, body, ctype = self._route(path, headers, raw, record)
        except ScriptViolation as exc:
            book.violate(str(exc))
            record.setdefault("outcome", "violation")
            record["note"] = str(exc)
            status, ctype = 400, "application/json"
            body = (
                wire.anthropic_error("invalid_request_error", f"rehearsal: {exc}")
                if path.startswith("/v1/messages")
                else wire.responses_error("invalid_request_error", f"rehearsal: {exc}")
            )
        except Exception as exc:  # a server bug must not kill the thread or print a traceback
            book.violate(f"server error on {path}: {type(exc).__name__}: {exc}")
            record.update(outcome="violation", note=f"{type(exc).__name__}: {exc}")
            status, ctype = 500, "application/json"
            body = wire.responses_error("server_error", "rehearsal server error")
        finally:
            record["status"] = status
            record.setdefault("body_sha256", "")
            record.setdefault("body_bytes", 0)
            record.setdefault("outcome", "not-found")
            book.record(record)
            self._send(status, body, ctype)

    def _authorized(self, headers: dict[str, str]) -> bool:
        key = self.server.api_key.encode()
        offered = headers.get("x-api-key", "")
        bearer = headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            offered = offered or bearer[7:].strip()
        return bool(offered) and hmac.compare_digest(offered.encode(), key)

    def _route(
        self, path: str, headers: dict[str, str], raw: bytes, record: dict[str, Any]
    ) -> tuple[int, bytes, str]:
        book = self.server.book
        if path == "/api/hello":
            record["outcome"] = "startup"
            return 200, b"", "text/plain"
        if headers.get("upgrade", "").lower() == "websocket":
            record["outcome"] = "websocket-refused"
            return 426, b'{"error":"websocket not offered; use HTTP"}', "application/json"
        if path == "/v1/models" and self.command == "GET":
            record["outcome"] = "startup"
            listing = {"object": "list", "data": [], "has_more": False}
            return 200, json.dumps(listing).encode(), "application/json"
        if self.command != "POST" or path not in (
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/responses",
        ):
            return 404, b'{"error":"not found"}', "application/json"
        if not record["authorized"]:
            book.violate(f"{path}: request without the rehearsal key")
            record["outcome"] = "unauthorized"
            return (
                401,
                wire.anthropic_error("authentication_error", "invalid x-api-key"),
                ("application/json"),
            )
        try:
            parsed = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ScriptViolation(f"{path}: body is not JSON") from exc
        except RecursionError:
            raise ScriptViolation(f"{path}: body is nested too deeply") from None
        if not isinstance(parsed, dict):
            raise ScriptViolation(f"{path}: body is not a JSON object")
        if path == "/v1/messages/count_tokens":
            record["outcome"] = "startup"
            return 200, b'{"input_tokens":1}', "application/json"
        model = str(parsed.get("model", "rehearsal"))
        if path == "/v1/messages" and not wire.tool_names(parsed):
            record["outcome"] = "auxiliary"  # Claude Code's own side requests (titles, ...)
            text = wire.anthropic_plain_text("OK", tag=f"aux{book.next_seq()}", model=model)
            return 200, text, "text/event-stream"
        return self._scripted(_DIALECTS[path], headers, parsed, model, record)

    def _scripted(
        self,
        dialect: _Dialect,
        headers: dict[str, str],
        parsed: dict[str, Any],
        model: str,
        record: dict[str, Any],
    ) -> tuple[int, bytes, str]:
        """Serve the next scripted turn of the invocation this request belongs to."""
        book = self.server.book
        invocation_at, turn = book.claim(
            dialect.api, dialect.session(headers, parsed), dialect.turn(parsed)
        )
        record.update(
            outcome="scripted",
            invocation=invocation_at,
            turn=turn,
            tool_result=dialect.last_tool_result(parsed),
        )
        stream = dialect.stream(
            book.scenario.invocations[invocation_at],
            turn,
            tag=f"r{invocation_at}t{turn}",
            model=model,
        )
        return 200, stream, "text/event-stream"


@dataclass(frozen=True, slots=True)
class _Dialect:
    """How one API names its session, counts its turn, reports a tool result and streams."""

    api: Api
    session: Callable[[Mapping[str, str], Mapping[str, Any]], str | None]
    turn: Callable[[Mapping[str, Any]], int]
    last_tool_result: Callable[[Mapping[str, Any]], str | None]
    stream: Callable[..., bytes]


# The scripted endpoints: Anthropic Messages (Claude Code), OpenAI Responses (Codex).
_DIALECTS: dict[str, _Dialect] = {
    "/v1/messages": _Dialect(
        "anthropic",
        wire.anthropic_session,
        wire.anthropic_turn,
        wire.anthropic_last_tool_result,
        wire.anthropic_stream,
    ),
    "/v1/responses": _Dialect(
        "openai",
        wire.codex_session,
        wire.codex_turn,
        wire.codex_last_tool_result,
        wire.responses_stream,
    ),
}


class _ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = False

    def __init__(self, book: ScriptBook, api_key: str, host: str) -> None:
        self.book = book
        self.api_key = api_key
        super().__init__((require_loopback(host), 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer (a killed CLI) is not an error of ours; the
        stdlib default would print a traceback to stderr."""


class ScriptedModelServer:
    """Owns the listening socket and the serving thread.

    Args:
        book: the scenario state every request is matched against.
        api_key: the only key the server accepts (``x-api-key`` or ``Bearer``).
        host: must be ``127.0.0.1`` (see :func:`require_loopback`).
    """

    def __init__(self, book: ScriptBook, api_key: str, host: str = LOOPBACK_HOST) -> None:
        self._server = _ModelServer(book, api_key, host)
        bound_host, port = self._server.server_address[:2]
        if bound_host != LOOPBACK_HOST:  # defence in depth: what the kernel actually bound
            self._server.server_close()
            raise NonLoopbackRefused(f"bound {bound_host!r}, not {LOOPBACK_HOST}")
        self.base_url = f"http://{LOOPBACK_HOST}:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="factory-rehearsal-model",
            daemon=True,
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting, close the socket; blocks up to one poll interval (50 ms)."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()


__all__ = [
    "LOOPBACK_HOST",
    "NonLoopbackRefused",
    "RehearsalRequest",
    "ScriptedModelServer",
    "require_loopback",
]
