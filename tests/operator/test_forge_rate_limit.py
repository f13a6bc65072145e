"""A forge's rate limit is waited out within a bound, else named ``forge-rate-limited``;
never the "check the token" of a real permission failure (issue 24 §5).

The in-process cases inject the sleeper and the clock (nothing sleeps); the CLI cases run
``factory operator plan`` as a real subprocess against the loopback emulation."""

from __future__ import annotations

import os
import re

import pytest

from factory.errors import ExitCode
from factory.operator.forge import MAX_RATE_RETRIES, ForgeFailure
from factory.operator.forge_client import Forge, read_forge
from tests.operator.helpers import REPO, TOKEN
from tests.support.cli import run_factory
from tests.support.forge import LoopbackForge

NOW = 1_800_000_000.0


class Sleeper:
    """The injected sleeper: records each wait, advances the injected clock by it."""

    def __init__(self) -> None:
        self.now = NOW
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _client(forge: LoopbackForge, sleeper: Sleeper, bound: float = 60.0) -> Forge:
    return Forge(forge.url, TOKEN, rate_wait_s=bound, sleep=sleeper.sleep, clock=sleeper.clock)


RATE_LIMITS_WITHIN_BOUND = {
    "429 Retry-After": (429, {"Retry-After": "7"}, 7.0),
    "403 secondary limit, Retry-After": (403, {"Retry-After": "60"}, 60.0),
    "403 primary limit, reset epoch": (
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 30)},
        30.0,
    ),
    "429 primary limit, reset epoch": (
        429,
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 12)},
        12.0,
    ),
}


@pytest.mark.parametrize("name", list(RATE_LIMITS_WITHIN_BOUND))
def test_a_rate_limit_within_the_bound_is_waited_out(forge: LoopbackForge, name: str) -> None:
    status, headers, wait = RATE_LIMITS_WITHIN_BOUND[name]
    forge.state.add_issue(REPO, 1, "one")
    forge.state.throttle(status, headers)
    sleeper = Sleeper()
    with _client(forge, sleeper) as client:
        intent = read_forge(client, REPO, "factory")
    assert intent.issue == 1
    assert sleeper.waits == [wait]
    assert len(forge.state.calls("GET", "/issues")) == 2  # the refused one, then the read


def test_waits_add_up_to_the_bound_and_no_further(forge: LoopbackForge) -> None:
    forge.state.throttle(429, {"Retry-After": "30"}, times=2)
    sleeper = Sleeper()
    with _client(forge, sleeper) as client:
        assert client.default_branch(REPO) == "main"
    assert sleeper.waits == [30.0, 30.0]  # exactly the bound
    # negative twin: one second more than the bound in all
    forge.state.throttle(429, {"Retry-After": "30"})
    forge.state.throttle(429, {"Retry-After": "31"})
    sleeper = Sleeper()
    with _client(forge, sleeper) as client, pytest.raises(ForgeFailure) as exc:
        client.default_branch(REPO)
    assert exc.value.code == "forge-rate-limited"
    assert sleeper.waits == [30.0]
    assert "again after 30 s of waiting" in exc.value.message


BEYOND_THE_BOUND = {
    "429 Retry-After too long": (429, {"Retry-After": "3600"}, "retry after 2027-01-15T09:00:00Z"),
    "403 reset too far": (
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 61)},
        "retry after 2027-01-15T08:01:01Z",
    ),
    "429 without saying when": (429, {}, "retry in a few minutes"),
    "429 with an HTTP-date": (
        429,
        {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"},
        "retry in a few minutes",
    ),
}


@pytest.mark.parametrize("name", list(BEYOND_THE_BOUND))
def test_a_rate_limit_beyond_the_bound_is_forge_rate_limited(
    forge: LoopbackForge, name: str
) -> None:
    status, headers, when = BEYOND_THE_BOUND[name]
    forge.state.throttle(status, headers)
    sleeper = Sleeper()
    with _client(forge, sleeper) as client, pytest.raises(ForgeFailure) as exc:
        client.open_issues(REPO, "factory")
    assert exc.value.code == "forge-rate-limited" and exc.value.exit_code == ExitCode.FAILURE
    assert when in exc.value.message and f"HTTP {status}" in exc.value.message
    assert "token" not in exc.value.message
    assert sleeper.waits == []  # nothing waited for a limit that will not lift in time


def test_a_forge_that_never_lifts_its_limit_is_retried_a_bounded_number_of_times(
    forge: LoopbackForge,
) -> None:
    forge.state.throttle(429, {"Retry-After": "0"}, times=MAX_RATE_RETRIES + 5)
    sleeper = Sleeper()
    with _client(forge, sleeper) as client, pytest.raises(ForgeFailure) as exc:
        client.default_branch(REPO)
    assert exc.value.code == "forge-rate-limited"
    assert len(forge.state.requests) == MAX_RATE_RETRIES + 1
    forge.state.throttles.clear()


def test_a_plain_403_is_still_the_permission_failure(forge: LoopbackForge) -> None:
    forge.state.throttle(403, {"x-ratelimit-remaining": "4999"})
    sleeper = Sleeper()
    with _client(forge, sleeper) as client, pytest.raises(ForgeFailure) as exc:
        client.open_issues(REPO, "factory")
    assert exc.value.code == "forge-auth" and "check the token" in exc.value.message
    assert sleeper.waits == [] and len(forge.state.requests) == 1


def test_a_rate_limited_pull_request_creation_is_created_once(forge: LoopbackForge) -> None:
    forge.state.throttle(403, {"Retry-After": "5"})
    sleeper = Sleeper()
    with _client(forge, sleeper) as client:
        pr = client.create_pull(REPO, head="factory/x", base="main", title="t", body="b")
    assert pr.head_ref == "factory/x" and sleeper.waits == [5.0]
    assert len(forge.state.repo(REPO).pulls) == 1


def _plan(forge: LoopbackForge) -> tuple[int, str]:
    proc = run_factory(
        ["operator", "plan", "--repository", REPO, "--forge-url", forge.url],
        env={**os.environ, "GH_TOKEN": TOKEN},
        timeout=60,
    )
    return proc.returncode, proc.stderr.decode()


def test_cli_plan_names_the_rate_limit_and_when_to_retry(forge: LoopbackForge) -> None:
    forge.state.throttle(429, {"Retry-After": "3600"})
    code, stderr = _plan(forge)
    assert code == ExitCode.FAILURE, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("factory: forge-rate-limited: the forge rate-limited the issues list")
    assert re.search(r"retry after \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", last), last
    assert "token" not in last
    # negative twin: a plain 403 keeps its permission error
    forge.state.throttle(403)
    code, stderr = _plan(forge)
    assert code == ExitCode.FAILURE, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("factory: forge-auth: ") and "check the token" in last
    # and with no limit the same command reads the forge
    code, stderr = _plan(forge)
    assert code == ExitCode.OK, stderr
