"""A loopback EMULATION of the few GitHub REST v3 endpoints factory's operator uses.

This is not GitHub and does not claim to behave like it beyond these endpoints, as far as
the operator relies on them:

* ``GET  /repos/{owner}/{name}`` — ``default_branch``;
* ``GET  /repos/{owner}/{name}/issues?state=open&labels=L&per_page=N[&page=P]`` — open
  issues carrying the label, oldest first, paginated with a ``Link: <…>; rel="next"``
  header;
* ``GET  /repos/{owner}/{name}/pulls?state=all&head=OWNER:BRANCH&per_page=N[&page=P]``;
* ``POST /repos/{owner}/{name}/pulls`` — create (201), or 422 when the head branch is not
  on the linked git remote (when one is linked) or an open PR for the head exists.

Rate limits are emulated on demand: :meth:`ForgeState.throttle` queues answers (a 429, or
a 403 with ``Retry-After`` / ``x-ratelimit-*`` headers) that the next requests get, in
order, instead of their normal answer — as GitHub's primary and secondary limits look.

It listens on 127.0.0.1 only, records every request (method, path, query, whether the
expected bearer token came with it, JSON body), answers anything else with 404 and
records it as *unexpected*, and records any call to a merge endpoint
(``PUT …/pulls/N/merge``, ``POST …/merges``) as a *merge attempt*. The pytest fixture
that owns it fails the test on any unexpected request or merge attempt.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

_REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
_MERGE = re.compile(_REPO + r"/(pulls/\d+/merge|merges)$")


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    authorized: bool
    body: Any


@dataclass
class RepoState:
    default_branch: str = "main"
    issues: list[dict[str, Any]] = field(default_factory=list)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    git_remote: Path | None = None  # a bare repository: PR heads must exist there


@dataclass(frozen=True)
class Throttled:
    """One canned rate-limit (or permission) answer: its status and headers."""

    status: int
    headers: tuple[tuple[str, str], ...]


@dataclass
class ForgeState:
    token: str | None
    repos: dict[str, RepoState] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    unexpected: list[Recorded] = field(default_factory=list)
    merge_attempts: list[Recorded] = field(default_factory=list)
    throttles: list[Throttled] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def throttle(self, status: int, headers: dict[str, str] | None = None, times: int = 1) -> None:
        """The next ``times`` requests get ``status`` with ``headers`` instead of an answer."""
        with self.lock:
            self.throttles.extend([Throttled(status, tuple((headers or {}).items()))] * times)

    def next_throttle(self) -> Throttled | None:
        with self.lock:
            return self.throttles.pop(0) if self.throttles else None

    def repo(self, full: str) -> RepoState:
        return self.repos.setdefault(full, RepoState())

    def add_issue(
        self, full: str, number: int, title: str, labels: tuple[str, ...] = ("factory",), **kw: Any
    ) -> dict[str, Any]:
        issue = {
            "number": number,
            "title": title,
            "state": "open",
            "labels": [{"name": label} for label in labels],
            "user": {"login": kw.pop("login", "reporter")},
            "updated_at": kw.pop("updated_at", "2026-01-01T00:00:00Z"),
            **kw,
        }
        with self.lock:
            self.repo(full).issues.append(issue)
        return issue

    def add_pull(self, full: str, **fields: Any) -> dict[str, Any]:
        repo = self.repo(full)
        with self.lock:
            number = 1000 + len(repo.pulls)
            pr = {
                "number": number,
                "state": fields.get("state", "open"),
                "html_url": f"https://forge.invalid/{full}/pull/{number}",
                "title": fields.get("title", "x"),
                "body": fields.get("body", ""),
                "head": {
                    "ref": fields["head"],
                    "sha": fields.get("sha", "0" * 40),
                    "repo": {"full_name": full},
                },
                "base": {"ref": fields.get("base", repo.default_branch)},
            }
            repo.pulls.append(pr)
        return pr

    def snapshot(self) -> str:
        """Everything mutable, as JSON text (to prove a refusal changed nothing)."""
        with self.lock:
            return json.dumps(
                {k: {"issues": v.issues, "pulls": v.pulls} for k, v in self.repos.items()},
                sort_keys=True,
            )

    def calls(self, method: str, suffix: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path.endswith(suffix)]


def _page(items: list[Any], query: dict[str, list[str]]) -> tuple[list[Any], int, int]:
    per = max(1, min(100, int(query.get("per_page", ["30"])[0])))
    page = max(1, int(query.get("page", ["1"])[0]))
    return items[(page - 1) * per : page * per], page, per


def _branch_on_remote(bare: Path, branch: str) -> str | None:
    proc = subprocess.run(
        ["git", "--git-dir", str(bare), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(
        self,
        status: int,
        value: Any,
        links: str | None = None,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if links:
            self.send_header("Link", links)
        for name, text in extra:
            self.send_header(name, text)
        self.end_headers()
        self.wfile.write(body)

    def _record(self, body: Any) -> Recorded:
        parts = urlsplit(self.path)
        state = self.server.state
        token = state.token
        auth = self.headers.get("Authorization")
        rec = Recorded(
            self.command,
            parts.path,
            parse_qs(parts.query),
            token is not None and auth == f"Bearer {token}",
            body,
        )
        with state.lock:
            state.requests.append(rec)
        return rec

    def _paged(self, rec: Recorded, items: list[Any]) -> None:
        chunk, page, per = _page(items, rec.query)
        links = None
        if page * per < len(items):
            query = {k: v[0] for k, v in rec.query.items()}
            query["page"] = str(page + 1)
            text = "&".join(f"{k}={v}" for k, v in query.items())
            port = int(self.server.server_address[1])
            links = f'<http://127.0.0.1:{port}{rec.path}?{text}>; rel="next"'
        self._reply(200, chunk, links)

    def _unexpected(self, rec: Recorded) -> None:
        state = self.server.state
        with state.lock:
            if _MERGE.search(rec.path):
                state.merge_attempts.append(rec)
            else:
                state.unexpected.append(rec)
        self._reply(404, {"message": "Not Found (emulation)"})

    def _throttled(self) -> bool:
        """Answer with the next queued rate-limit answer, if there is one."""
        canned = self.server.state.next_throttle()
        if canned is None:
            return False
        message = "API rate limit exceeded (emulation)"
        if canned.status == 403 and not canned.headers:
            message = "Resource not accessible by integration (emulation)"
        self._reply(canned.status, {"message": message}, extra=canned.headers)
        return True

    def do_GET(self) -> None:
        rec = self._record(None)
        if self._throttled():
            return
        state = self.server.state
        match = re.fullmatch(_REPO + r"(?P<rest>/issues|/pulls)?", rec.path)
        full = f"{match['owner']}/{match['name']}" if match else ""
        if match is None or full not in state.repos:
            self._unexpected(rec)
            return
        repo = state.repos[full]
        if match["rest"] is None:
            self._reply(200, {"full_name": full, "default_branch": repo.default_branch})
        elif match["rest"] == "/issues":
            label = rec.query.get("labels", [""])[0]
            with state.lock:
                items = [
                    i
                    for i in repo.issues
                    if i["state"] == "open" and label in [x["name"] for x in i["labels"]]
                ]
            self._paged(rec, items)
        else:
            head = rec.query.get("head", [""])[0]
            with state.lock:
                items = [p for p in repo.pulls if f"{match['owner']}:{p['head']['ref']}" == head]
            self._paged(rec, items)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("latin-1")
        rec = self._record(body)
        if self._throttled():
            return
        state = self.server.state
        match = re.fullmatch(_REPO + r"/pulls", rec.path)
        full = f"{match['owner']}/{match['name']}" if match else ""
        if match is None or full not in state.repos or not isinstance(body, dict):
            self._unexpected(rec)
            return
        if not rec.authorized:
            self._reply(401, {"message": "Requires authentication (emulation)"})
            return
        repo = state.repos[full]
        head = body.get("head", "")
        sha = _branch_on_remote(repo.git_remote, head) if repo.git_remote else "0" * 40
        if sha is None or any(
            p["head"]["ref"] == head and p["state"] == "open" for p in repo.pulls
        ):
            self._reply(422, {"message": "Validation Failed (emulation)"})
            return
        pr = state.add_pull(
            full,
            head=head,
            base=body.get("base"),
            title=body.get("title"),
            body=body.get("body"),
            sha=sha,
        )
        self._reply(201, pr)

    def do_PUT(self) -> None:
        self._unexpected(self._record(None))

    do_PATCH = do_PUT
    do_DELETE = do_PUT


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ForgeState


@dataclass
class LoopbackForge:
    """A running emulation: its API root URL and its state."""

    url: str
    state: ForgeState


@contextmanager
def serve_forge(token: str | None = "forge-test-token") -> Iterator[LoopbackForge]:
    """Serve the emulation on 127.0.0.1 (a free port) for the duration of the block."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = ForgeState(token=token)
    thread = threading.Thread(target=server.serve_forever, name="loopback-forge", daemon=True)
    thread.start()
    try:
        port = int(server.server_address[1])
        yield LoopbackForge(f"http://127.0.0.1:{port}", server.state)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
