"""Real git remotes for tests: a bare repository over ``file://`` and over loopback HTTP.

:func:`serve_http` serves bare repositories under one folder with git's own smart-HTTP
server program, ``git http-backend``, run as a CGI program per request behind a small
``http.server`` bridge on 127.0.0.1 — the same protocol a forge speaks to ``git push``.
Pushes are enabled per repository with ``http.receivepack=true``. Every request (method,
path, status) is recorded.

:func:`remote_state` captures everything a push could change (refs, packed refs, the set
of object files), so a test can prove a refusal left the remote exactly as it was.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.git import git


def bare_from(source: Path, bare: Path) -> Path:
    """A bare clone of ``source`` at ``bare`` that accepts pushes over HTTP."""
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(source), str(bare)], check=True, capture_output=True
    )
    git(bare, "config", "http.receivepack", "true")
    return bare


def remote_state(bare: Path) -> dict[str, Any]:
    """Refs and object files of a bare repository (a push changes at least one)."""
    objects = sorted(
        os.path.relpath(os.path.join(d, f), bare)
        for d, _, files in os.walk(bare / "objects")
        for f in files
    )
    packed = bare / "packed-refs"
    return {
        "refs": git(bare, "for-each-ref", "--format=%(refname) %(objectname)"),
        "packed": packed.read_text() if packed.exists() else None,
        "objects": objects,
    }


@dataclass
class HttpRemote:
    """A running ``git http-backend`` bridge: the base URL and the request log."""

    base_url: str
    root: Path
    requests: list[tuple[str, str, int]] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}"


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = bytearray()
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return bytes(out)
            out += handler.rfile.read(size)
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


class _Bridge(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _cgi(self) -> None:
        parts = urlsplit(self.path)
        body = _read_body(self) if self.command == "POST" else b""
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "GIT_PROJECT_ROOT": str(self.server.remote.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.server.remote.root),
            "REQUEST_METHOD": self.command,
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        proc = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=120
        )
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.server.remote.requests.append((self.command, parts.path, status))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _cgi
    do_POST = _cgi


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    remote: HttpRemote


@contextmanager
def serve_http(root: Path) -> Iterator[HttpRemote]:
    """Serve every bare repository under ``root`` at ``http://127.0.0.1:PORT/<name>``."""
    server = _Server(("127.0.0.1", 0), _Bridge)
    host, port = server.server_address[:2]
    server.remote = HttpRemote(f"http://{host}:{port}", root)
    thread = threading.Thread(target=server.serve_forever, name="git-http-backend", daemon=True)
    thread.start()
    try:
        yield server.remote
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
