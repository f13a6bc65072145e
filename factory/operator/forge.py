"""What the forge client (:mod:`factory.operator.forge_client`) checks and reads: the
operator's inputs (``--repository``, ``--label``, ``--forge-url``), the token, the forge's
rate-limit answers and the GitHub records it returns, each validated; and the forge's
typed errors.

* ``--forge-url`` is the API root: ``https://api.github.com`` by default, e.g.
  ``https://ghe.example/api/v3`` for GitHub Enterprise. ``http://`` is accepted only for a
  literal loopback address (127.0.0.0/8, ``[::1]``), which is what tests use; a URL with
  user info, a query or a fragment is refused.
* The token (``GH_TOKEN``, ``GITHUB_TOKEN``, else ``gh auth token``) is sent only as the
  ``Authorization`` header to the forge origin. It is never printed, logged, stored or
  passed to any child; error messages carry the HTTP status, never headers or bodies.
* A rate-limit answer (HTTP 429, or a 403 carrying ``Retry-After`` or
  ``x-ratelimit-remaining: 0``) says how long to wait (``Retry-After`` seconds, else the
  ``x-ratelimit-reset`` epoch), or nothing; it is never ``forge-auth``: that is a 401, or
  a 403 without those headers.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from factory.errors import Failure, Refused
from factory.operator.intent import IssueRecord
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


def utc_stamp(epoch: float) -> str:
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


def not_github(what: str) -> str:
    return f"the forge's answer to {what} is not what GitHub's API returns"


def str_field(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise FORGE_PROTOCOL(not_github(what))
    return value


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise FORGE_PROTOCOL(not_github(what))
    return value


def issue_record(item: Any) -> IssueRecord:
    """One element of the issues list, validated and reduced."""
    what = "the issues list"
    if not isinstance(item, dict) or not isinstance(item.get("labels"), list):
        raise FORGE_PROTOCOL(not_github(what))
    labels = []
    for label in item["labels"]:
        labels.append(str_field(label.get("name") if isinstance(label, dict) else label, what))
    user = item.get("user")
    author = user.get("login") if isinstance(user, dict) else None
    updated = item.get("updated_at")
    return IssueRecord(
        number=_int(item.get("number"), what),
        kind="pull_request" if "pull_request" in item else "issue",
        title=str_field(item.get("title"), what),
        labels=labels,
        author=author if isinstance(author, str) else None,
        updated_at=updated if isinstance(updated, str) else None,
    )


def pull_request(item: Any) -> PullRequest:
    """One pull request object, validated."""
    what = "a pull request"
    if not isinstance(item, dict):
        raise FORGE_PROTOCOL(not_github(what))
    head, base = item.get("head"), item.get("base")
    if not isinstance(head, dict) or not isinstance(base, dict):
        raise FORGE_PROTOCOL(not_github(what))
    repo = head.get("repo")
    full = repo.get("full_name") if isinstance(repo, dict) else None
    url = str_field(item.get("html_url"), what)
    if urlsplit(url).scheme not in ("https", "http") or any(ord(c) < 0x21 for c in url):
        raise FORGE_PROTOCOL(not_github(what))
    body = item.get("body")
    return PullRequest(
        number=_int(item.get("number"), what),
        state=str_field(item.get("state"), what),
        url=url,
        title=str_field(item.get("title"), what),
        body=body if isinstance(body, str) else "",
        head_ref=str_field(head.get("ref"), what),
        head_sha=str_field(head.get("sha"), what),
        head_repo=full if isinstance(full, str) else None,
        base_ref=str_field(base.get("ref"), what),
    )
