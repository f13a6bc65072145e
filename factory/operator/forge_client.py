"""The forge client: the GitHub REST v3 endpoints the operator uses, and nothing else.

Endpoints: list open issues (every page), read the repository (its default branch), list
pull requests for a head branch (every page), create a pull request. There is no method for
any other endpoint — in particular none that merges, closes or edits anything. Inputs,
token, rate-limit answers and records are checked by :mod:`factory.operator.forge`.

* Pagination follows ``Link: rel="next"`` to the end; a next link to another origin, a page
  that does not parse, or more than :data:`~factory.operator.forge.MAX_PAGES` pages fails
  the whole read — a partial read is never a snapshot.
* httpx runs with ``trust_env=False`` (no proxy variables, no ``.netrc``) and without
  following redirects.
* A rate-limit answer is waited out when the forge says for how long and the waits add up
  to at most :data:`~factory.operator.forge.MAX_RATE_WAIT_S`; otherwise it is
  ``forge-rate-limited`` (exit 4) naming when to retry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from factory.operator.forge import (
    FORGE_AUTH,
    FORGE_PROTOCOL,
    FORGE_RATE_LIMITED,
    FORGE_READ_INCOMPLETE,
    FORGE_STATUS,
    FORGE_UNREACHABLE,
    MAX_PAGES,
    MAX_RATE_RETRIES,
    MAX_RATE_WAIT_S,
    PER_PAGE,
    TIMEOUT_S,
    ForgeFailure,
    PullRequest,
    check_forge_url,
    check_label,
    check_repository,
    issue_record,
    not_github,
    pull_request,
    str_field,
    throttle_of,
    utc_stamp,
)
from factory.operator.intent import IssueRecord, RunIntent, run_intent, snapshot


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
            f"{utc_stamp(self._clock() + wait)}"
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
            raise FORGE_PROTOCOL(not_github(what)) from None

    def _pages(self, path: str, params: dict[str, str], what: str) -> list[Any]:
        url = f"{self.base_url}{path}"
        items: list[Any] = []
        query: dict[str, str] | None = {**params, "per_page": str(PER_PAGE)}
        for _ in range(MAX_PAGES):
            response = self._send("GET", url, what, params=query)
            page = self._json(response, what)
            if not isinstance(page, list):
                raise FORGE_PROTOCOL(not_github(what))
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
            raise FORGE_PROTOCOL(not_github(what))
        return str_field(value.get("default_branch"), what)

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
