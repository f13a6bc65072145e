"""The rehearsal route: a scripted loopback model for the real CLIs (SPEC P-5).

Usage::

    scenario = load_scenario(Path("factory/rehearsal/scenarios/demo.json"))
    async with open_rehearsal(scenario, config_root) as session:
        ...  # run the profiles with route=session.route
        session.check_consumed()  # raises RehearsalIncomplete if the script was not followed
        evidence = session.evidence()  # factory.rehearsal-log/1

The route's key is minted here per run (``secrets.token_urlsafe``); it is never read from
the caller's environment. See ``design/rehearsal.md``.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import trio
from pydantic import Field

from factory.documents.canonical import digest
from factory.errors import Failure, Refused
from factory.models import StrictModel
from factory.provider_api import RehearsalRoute
from factory.rehearsal.book import Progress, RehearsalRequest, ScriptBook
from factory.rehearsal.scenario import (
    SCENARIO_SCHEMA,
    Invocation,
    Scenario,
    ScenarioInvalid,
    load_scenario,
    parse_scenario,
)
from factory.rehearsal.server import (
    LOOPBACK_HOST,
    NonLoopbackRefused,
    ScriptedModelServer,
    require_loopback,
)

SCENARIO_DIGEST_TAG = "factory.rehearsal-scenario/1"
CLAUDE_CONFIG_SUBDIR = "claude"
CODEX_CONFIG_SUBDIR = "codex"
DEMO_SCENARIO = Path(__file__).parent / "scenarios" / "demo.json"


class RehearsalIncomplete(Failure):
    """The CLIs did not follow the scenario: a violation, or turns never requested (exit 4)."""


SCENARIO_UNCONSUMED = RehearsalIncomplete.define(
    "rehearsal-scenario-unconsumed", "inspect the rehearsal-log evidence", default=True
)


class ConfigRootNotEmpty(Refused):
    """The rehearsal config root already holds files (exit 2).

    Claude reads ``<config_root>/claude/settings.json`` (``--setting-sources user``), whose
    ``env`` block overrides the injected endpoint and key; a fresh folder keeps the route's
    values the only ones.
    """


CONFIG_ROOT_NOT_EMPTY = ConfigRootNotEmpty.define(
    "rehearsal-config-root-not-empty", "pass a new or empty folder", default=True
)


class RehearsalLog(StrictModel):
    """Evidence of one rehearsal run: what was scripted, what was served, what went wrong."""

    schema_id: Literal["factory.rehearsal-log/1"] = Field(
        default="factory.rehearsal-log/1", alias="schema"
    )
    scenario_digest: str
    base_url: str
    requests: tuple[RehearsalRequest, ...]
    progress: tuple[Progress, ...]
    problems: tuple[str, ...]


class RehearsalSession:
    """A running scripted model.

    Attributes:
        route: the :class:`RehearsalRoute` to hand to the profiles (endpoint, minted key,
            ``config_root`` with ``claude/`` and ``codex/`` folders already created).
        scenario: the script being served.
    """

    def __init__(self, route: RehearsalRoute, scenario: Scenario, book: ScriptBook) -> None:
        self.route = route
        self.scenario = scenario
        self._book = book

    @property
    def requests(self) -> tuple[RehearsalRequest, ...]:
        """Every request served so far, in arrival order."""
        return self._book.requests

    def progress(self) -> tuple[Progress, ...]:
        """Per-invocation progress, in scenario order."""
        return self._book.progress()

    def problems(self) -> tuple[str, ...]:
        """Violations and unconsumed invocations; empty when the script ran exactly."""
        return self._book.problems()

    def check_consumed(self) -> None:
        """Raise unless every scripted turn was served and nothing else went wrong.

        Raises:
            RehearsalIncomplete: naming the first problem and how many there are.
        """
        problems = self.problems()
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise RehearsalIncomplete(
                f"the CLIs did not follow the rehearsal scenario: {problems[0]}{more}"
            )

    def evidence(self) -> RehearsalLog:
        """A :class:`RehearsalLog` snapshot (no keys, no bodies: digests and sizes)."""
        return RehearsalLog(
            scenario_digest=scenario_digest(self.scenario),
            base_url=self.route.base_url,
            requests=self.requests,
            progress=self.progress(),
            problems=self.problems(),
        )


def _fresh_private_dir(folder: Path) -> None:
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not folder.is_dir() or any(folder.iterdir()):
            raise ConfigRootNotEmpty(
                f"rehearsal config root {folder} is not a new or empty folder"
            ) from None
    folder.chmod(0o700)


def scenario_digest(scenario: Scenario) -> str:
    """``sha256:<hex>`` over the scenario's canonical JSON, tag ``factory.rehearsal-scenario/1``."""
    return digest(SCENARIO_DIGEST_TAG, scenario.to_json_value())


@asynccontextmanager
async def open_rehearsal(
    scenario: Scenario, config_root: Path, *, host: str = LOOPBACK_HOST
) -> AsyncIterator[RehearsalSession]:
    """Start the scripted model for one run; stop it on exit.

    Args:
        scenario: the script to replay.
        config_root: a private folder for the CLIs' config homes on this route: created
            (mode 0700) if missing, or an existing *empty* folder (set to 0700);
            ``claude/`` and ``codex/`` are created inside.
        host: must be ``127.0.0.1``; exists so a refusal can be tested.

    Raises:
        NonLoopbackRefused: ``host`` is not the IPv4 loopback address.
        ConfigRootNotEmpty: ``config_root`` exists and is not an empty folder (a planted
            ``claude/settings.json`` could re-route Claude away from this server).
    """
    require_loopback(host)
    _fresh_private_dir(config_root)
    for sub in (CLAUDE_CONFIG_SUBDIR, CODEX_CONFIG_SUBDIR):
        (config_root / sub).mkdir(mode=0o700, exist_ok=True)
    book = ScriptBook(scenario)
    server = ScriptedModelServer(book, api_key := f"rehearsal-{secrets.token_urlsafe(24)}", host)
    server.start()
    try:
        route = RehearsalRoute(base_url=server.base_url, api_key=api_key, config_root=config_root)
        yield RehearsalSession(route, scenario, book)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(server.stop)


__all__ = [
    "CLAUDE_CONFIG_SUBDIR",
    "CODEX_CONFIG_SUBDIR",
    "DEMO_SCENARIO",
    "SCENARIO_SCHEMA",
    "SCENARIO_UNCONSUMED",
    "ConfigRootNotEmpty",
    "Invocation",
    "NonLoopbackRefused",
    "Progress",
    "RehearsalIncomplete",
    "RehearsalLog",
    "RehearsalRequest",
    "RehearsalSession",
    "Scenario",
    "ScenarioInvalid",
    "load_scenario",
    "open_rehearsal",
    "parse_scenario",
    "scenario_digest",
]
