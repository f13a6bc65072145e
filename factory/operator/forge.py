"""The forge client: the GitHub REST v3 endpoints the operator uses, and nothing else.

Endpoints: list open issues (every page), read the repository (its default branch), list
pull requests for a head branch (every page), create a pull request. There is no method for
any other endpoint — in particular none that merges, closes or edits anything.

* ``--forge-url`` is the API root: ``https://api.github.com`` by default, e.g.
  ``https://ghe.example/api/v3`` for GitHub Enterprise. ``http://`` is accepted only for a
  literal loopback address (127.0.0.0/8, ``[::1]``), which is what tests use; a URL with
  user info, a query or a fragment is refused.
* Pagination follows ``Link: rel="next"`` to the end; a next link to another origin, a page
  that does not parse, or more than :data:`MAX_PAGES` pages fails the whole read — a
  partial read is never a snapshot.
* The token (``GH_TOKEN``, ``GITHUB_TOKEN``, else ``gh auth token``) is sent only as the
  ``Authorization`` header to the forge origin. It is never printed, logged, stored or
  passed to any child; error messages carry the HTTP status, never headers or bodies.
* httpx runs with ``trust_env=False`` (no proxy variables, no ``.netrc``) and without
  following redirects.
* A rate-limit answer (HTTP 429, or a 403 carrying ``Retry-After`` or
  ``x-ratelimit-remaining: 0``) is waited out when the forge says for how long
  (``Retry-After`` seconds, else the ``x-ratelimit-reset`` epoch) and the waits add up to at
  most :data:`MAX_RATE_WAIT_S`; otherwise it is ``forge-rate-limited`` (exit 4) naming when
  to retry. It is never ``forge-auth``: that is a 401, or a 403 without those headers.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from factory.errors import Failure, Refused
from factory.operator.intent import IssueRecord, RunIntent, run_intent, snapshot
from factory.proc.local import CommandFailure, run_local

DEFAULT_FORGE: Final = "https://api.github.com"
MAX_PAGES: Final = 100
PER_PAGE: Final = 100
TIMEOUT_S: Final = 30.0
MAX_RATE_WAIT_S: Final = 60.0
"""The most a forge call waits, in all, for rate limits the forge says will lift."""
MAX_RATE_RETRIES: Final = 5
"""The most retries of one call after rate-limit answers (a forge that keeps saying
``Retry-After: 0`` must not loop forever)."""
_SECONDS = re.compile(r"^[0-9]{1,12}$")
_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
_LABEL_MAX = 100


class ForgeRefused(Refused):
    """A forge argument is refused before anything is read (exit 2)."""


class ForgeFailure(Failure):
    """The forge could not be read or answered something unusable (exit 4)."""


_FORM = "see 'factory operator plan --help' for the accepted form"
FORGE_URL_REFUSED = ForgeRefused.define(
    "forge-url-refused", "pass https://HOST[/PATH], or http:// to a literal loopback IP"
)
LABEL_INVALID = ForgeRefused.define("label-invalid", _FORM)
REPOSITORY_INVALID = ForgeRefused.define("repository-invalid", _FORM)
FORGE_TOKEN_MISSING = ForgeRefused.define(
    "forge-token-missing", "set GH_TOKEN (or GITHUB_TOKEN), or log in with 'gh auth login'"
)
_RETRY = "check --forge-url, the token and the network, then retry"
FORGE_PROTOCOL = ForgeFailure.define(
    "forge-protocol", "check --forge-url points at a GitHub REST v3 API root"
)
FORGE_READ_INCOMPLETE = ForgeFailure.define(
    "forge-read-incomplete", "narrow the label, or check --forge-url"
)
FORGE_UNREACHABLE = ForgeFailure.define("forge-unreachable", _RETRY)
FORGE_AUTH = ForgeFailure.define("forge-auth", "check the token (GH_TOKEN) and its scopes")
FORGE_STATUS = ForgeFailure.define("forge-status", _RETRY)
FORGE_RATE_LIMITED = ForgeFailure.define(
    "forge-rate-limited", "wait until the time it names, then run the command again"
)


def check_repository(text: str) -> str:
    """``OWNER/NAME`` as GitHub spells names, else ``repository-invalid`` (exit 2)."""
    if not _REPO.fullmatch(text) or text.endswith((".", "/..")) or "/." in text:
        raise REPOSITORY_INVALID("--repository must be OWNER/NAME (letters, digits, '-', '_', '.')")
    return text


def check_label(text: str) -> str:
    """A non-empty label without control characters."""
    if not text.strip() or len(text) > _LABEL_MAX or any(ord(c) < 0x20 for c in text):
        raise LABEL_INVALID("--label must be a short, non-empty label")
    return text


def check_forge_url(text: str) -> str:
    """The API root without a trailing slash (see the module docstring for the rules)."""
    parts = urlsplit(text)
    bad = FORGE_URL_REFUSED(
        "--forge-url must be https://HOST[/PATH] (http:// only for a literal loopback "
        "address), without user info, query or fragment"
    )
    if parts.username or parts.password or parts.query or parts.fragment or not parts.hostname:
        raise bad
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise bad
    if parts.scheme == "http":
        try:
            host = ipaddress.ip_address(parts.hostname)
        except ValueError:
            raise bad from None
        if not host.is_loopback:
            raise bad
    elif parts.scheme != "https":
        raise bad
    try:
        _ = parts.port
    except ValueError:
        raise bad from None
    return text.rstrip("/")


def _gh_host(forge: str) -> str:
    host = urlsplit(forge).hostname or ""
    return "github.com" if host == "api.github.com" else host


def find_token(
    forge: str,
    env: Mapping[str, str] | None = None,
    gh: Callable[[str], str | None] | None = None,
) -> str | None:
    """``GH_TOKEN``, else ``GITHUB_TOKEN``, else ``gh auth token`` (when ``gh`` exists)."""
    source = os.environ if env is None else env
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        value = source.get(name, "").strip()
        if value:
            return value
    return (gh or gh_auth_token)(_gh_host(forge))


def gh_auth_token(host: str) -> str | None:
    """The GitHub CLI's token for ``host``, or ``None`` (no ``gh``, not logged in).

    Runs through the one short-command wrapper (allow-listed environment, bounded output,
    a deadline); ``GH_CONFIG_DIR`` is passed on when set, so ``gh`` finds its login.
    """
    exe = shutil.which("gh")
    if exe is None:
        return None
    extra = (
        {"GH_CONFIG_DIR": os.environ["GH_CONFIG_DIR"]} if "GH_CONFIG_DIR" in os.environ else None
    )
    try:
        done = run_local(
            [exe, "auth", "token", "--hostname", host],
            cwd=Path(os.path.abspath(os.sep)),
            env_extra=extra,
            timeout_s=15,
            stdout_cap=64 << 10,
        )
    except CommandFailure:
        return None
    token = done.stdout.decode("utf-8", "replace").strip()
    return token if done.returncode == 0 and token and "\n" not in token else None


@dataclass(frozen=True, slots=True)
class Throttle:
    """A rate-limit answer: how long the forge asks to wait (None: it did not say)."""

    wait_s: float | None


def _seconds(value: str | None) -> int | None:
    return int(value.strip()) if value is not None and _SECONDS.fullmatch(value.strip()) else None


def throttle_of(response: httpx.Response, now: float) -> Throttle | None:
    """The rate limit ``response`` reports, or None (not one: a 403 without ``Retry-After``
    or ``x-ratelimit-remaining: 0`` is a permission failure). ``now``: epoch seconds."""
    if response.status_code not in (403, 429):
        return None
    headers = response.headers
    retry_after = _seconds(headers.get("retry-after"))
    exhausted = headers.get("x-ratelimit-remaining", "").strip() == "0"
    reset = _seconds(headers.get("x-ratelimit-reset")) if exhausted else None
    if retry_after is not None:
        return Throttle(float(retry_after))
    if reset is not None:
        return Throttle(float(max(0, math.ceil(reset - now))))
    if response.status_code == 429 or exhausted or "retry-after" in headers:
        return Throttle(None)
    return None


def _at(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class PullRequest:
    """The fields of a pull request the adapter compares."""

    number: int
    state: str
    url: str
    title: str
    body: str
    head_ref: str
    head_sha: str
    head_repo: str | None
    base_ref: str


def _not_github(what: str) -> str:
    return f"the forge's answer to {what} is not what GitHub's API returns"


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise FORGE_PROTOCOL(_not_github(what))
    return value


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise FORGE_PROTOCOL(_not_github(what))
    return value


def issue_record(item: Any) -> IssueRecord:
    """One element of the issues list, validated and reduced."""
    what = "the issues list"
    if not isinstance(item, dict) or not isinstance(item.get("labels"), list):
        raise FORGE_PROTOCOL(_not_github(what))
    labels = []
    for label in item["labels"]:
        labels.append(_str(label.get("name") if isinstance(label, dict) else label, what))
    user = item.get("user")
    author = user.get("login") if isinstance(user, dict) else None
    updated = item.get("updated_at")
    return IssueRecord(
        number=_int(item.get("number"), what),
        kind="pull_request" if "pull_request" in item else "issue",
        title=_str(item.get("title"), what),
        labels=labels,
        author=author if isinstance(author, str) else None,
        updated_at=updated if isinstance(updated, str) else None,
    )


def pull_request(item: Any) -> PullRequest:
    """One pull request object, validated."""
    what = "a pull request"
    if not isinstance(item, dict):
        raise FORGE_PROTOCOL(_not_github(what))
    head, base = item.get("head"), item.get("base")
    if not isinstance(head, dict) or not isinstance(base, dict):
        raise FORGE_PROTOCOL(_not_github(what))
    repo = head.get("repo")
    full = repo.get("full_name") if isinstance(repo, dict) else None
    url = _str(item.get("html_url"), what)
    if urlsplit(url).scheme not in ("https", "http") or any(ord(c) < 0x21 for c in url):
        raise FORGE_PROTOCOL(_not_github(what))
    body = item.get("body")
    return PullRequest(
        number=_int(item.get("number"), what),
        state=_str(item.get("state"), what),
        url=url,
        title=_str(item.get("title"), what),
        body=body if isinstance(body, str) else "",
        head_ref=_str(head.get("ref"), what),
        head_sha=_str(head.get("sha"), what),
        head_repo=full if isinstance(full, str) else None,
        base_ref=_str(base.get("ref"), what),
    )


class Forge:
    """A GitHub REST v3 client for one API root. Use as a context manager."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = TIMEOUT_S,
        rate_wait_s: float = MAX_RATE_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``rate_wait_s``: the most all rate-limit waits of one call may add up to;
        ``sleep`` and ``clock`` (epoch seconds) are injectable so tests never sleep."""
        self.base_url = check_forge_url(base_url)
        self._rate_wait_s = rate_wait_s
        self._sleep = sleep
        self._clock = clock
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "factory-operator",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._origin = urlsplit(self.base_url)
        self._client = httpx.Client(
            headers=headers,
            timeout=timeout_s,
            trust_env=False,
            follow_redirects=False,
            transport=transport,
        )

    def __enter__(self) -> Forge:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def _same_origin(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            (parts.scheme, parts.hostname, parts.port)
            == (self._origin.scheme, self._origin.hostname, self._origin.port)
            and parts.path.startswith(self._origin.path)
            and not parts.username
        )

    def _send(self, method: str, url: str, what: str, **kw: Any) -> httpx.Response:
        """One call, waiting out rate limits within the bound (see the module doc)."""
        waited = 0.0
        for attempt in range(MAX_RATE_RETRIES + 1):
            response = self._request(method, url, what, **kw)
            throttle = throttle_of(response, self._clock())
            if throttle is None:
                return response
            wait = throttle.wait_s
            if wait is None or waited + wait > self._rate_wait_s or attempt == MAX_RATE_RETRIES:
                raise self._rate_limited(response.status_code, what, wait, waited)
            self._sleep(wait)
            waited += wait
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _rate_limited(
        self, status: int, what: str, wait: float | None, waited: float
    ) -> ForgeFailure:
        said = f"the forge rate-limited {what} (HTTP {status})"
        if waited:
            said += f", again after {waited:.0f} s of waiting"
        if wait is None:
            return FORGE_RATE_LIMITED(f"{said}, without saying until when; retry in a few minutes")
        return FORGE_RATE_LIMITED(
            f"{said}; it asks for {wait:.0f} s more, and factory waits at most "
            f"{self._rate_wait_s:.0f} s and {MAX_RATE_RETRIES} retries per call: retry after "
            f"{_at(self._clock() + wait)}"
        )

    def _request(self, method: str, url: str, what: str, **kw: Any) -> httpx.Response:
        try:
            response = self._client.request(method, url, **kw)
        except httpx.HTTPError as exc:
            raise FORGE_UNREACHABLE(
                f"the forge did not answer {what} ({type(exc).__name__}); check --forge-url "
                "and the network"
            ) from None
        return response

    def _json(self, response: httpx.Response, what: str, ok: tuple[int, ...] = (200,)) -> Any:
        if response.status_code not in ok:
            code = FORGE_AUTH if response.status_code in (401, 403) else FORGE_STATUS
            raise code(f"the forge answered {what} with HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise FORGE_PROTOCOL(_not_github(what)) from None

    def _pages(self, path: str, params: dict[str, str], what: str) -> list[Any]:
        url = f"{self.base_url}{path}"
        items: list[Any] = []
        query: dict[str, str] | None = {**params, "per_page": str(PER_PAGE)}
        for _ in range(MAX_PAGES):
            response = self._send("GET", url, what, params=query)
            page = self._json(response, what)
            if not isinstance(page, list):
                raise FORGE_PROTOCOL(_not_github(what))
            items.extend(page)
            nxt = response.links.get("next", {}).get("url")
            if not nxt:
                return items
            if not self._same_origin(nxt):
                raise FORGE_READ_INCOMPLETE(
                    f"the forge's next page of {what} points to another origin; read refused"
                )
            url, query = nxt, None
        raise FORGE_READ_INCOMPLETE(
            f"{what} has more than {MAX_PAGES} pages; a partial read is never a snapshot"
        )

    def _repo_path(self, repository: str) -> str:
        return f"/repos/{check_repository(repository)}"

    def open_issues(self, repository: str, label: str) -> list[IssueRecord]:
        """Every open issue (and pull request) carrying ``label``, all pages."""
        raw = self._pages(
            f"{self._repo_path(repository)}/issues",
            {"state": "open", "labels": check_label(label), "sort": "created", "direction": "asc"},
            "the issues list",
        )
        return [issue_record(item) for item in raw]

    def default_branch(self, repository: str) -> str:
        """The repository's default branch name."""
        what = "the repository"
        url = f"{self.base_url}{self._repo_path(repository)}"
        value = self._json(self._send("GET", url, what), what)
        if not isinstance(value, dict):
            raise FORGE_PROTOCOL(_not_github(what))
        return _str(value.get("default_branch"), what)

    def pulls_for_head(self, repository: str, branch: str) -> list[PullRequest]:
        """Every pull request (any state) whose head is ``OWNER:branch``, all pages."""
        owner = check_repository(repository).split("/")[0]
        raw = self._pages(
            f"{self._repo_path(repository)}/pulls",
            {"state": "all", "head": f"{owner}:{branch}"},
            "the pull request list",
        )
        return [pull_request(item) for item in raw]

    def create_pull(
        self, repository: str, *, head: str, base: str, title: str, body: str
    ) -> PullRequest:
        """Open a pull request (never a draft, never merged)."""
        what = "the pull request creation"
        url = f"{self.base_url}{self._repo_path(repository)}/pulls"
        payload = {"title": title, "head": head, "base": base, "body": body}
        response = self._send("POST", url, what, json=payload)
        return pull_request(self._json(response, what, ok=(201,)))


def read_forge(forge: Forge, repository: str, label: str) -> RunIntent:
    """One complete read of the forge, as the run intent it yields (``plan``'s core)."""
    items = forge.open_issues(repository, label)
    return run_intent(snapshot(forge.base_url, repository, label, items))
