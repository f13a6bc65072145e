"""A tiny OTLP/HTTP trace receiver on 127.0.0.1 for tests, and a recording "proxy"."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    """What a loopback HTTP server saw: (method, path, headers, body) per request."""

    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[dict[str, Any]]:
        """Every span in every ExportTraceServiceRequest, flattened, with its resource."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        out: list[dict[str, Any]] = []
        with self.lock:
            bodies = [body for method, _, _, body in self.requests if method == "POST"]
        for body in bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for rs in request.resource_spans:
                resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        out.append(
                            {
                                "name": span.name,
                                "scope": ss.scope.name,
                                "resource": resource,
                                "attributes": {a.key: _value(a.value) for a in span.attributes},
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                # 0 unset, 1 ok, 2 error (opentelemetry.proto Status)
                                "status": ("UNSET", "OK", "ERROR")[span.status.code],
                                "status_message": span.status.message,
                            }
                        )
        return out


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def _handler(received: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with received.lock:
                received.requests.append((self.command, self.path, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = _record
        do_GET = _record
        do_CONNECT = _record

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@contextmanager
def http_receiver() -> Iterator[tuple[int, Received]]:
    """Serve on 127.0.0.1:<free port>; yields (port, Received)."""
    received = Received()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


def refused_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def silent_listener() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (a hung collector)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])
