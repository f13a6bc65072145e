"""Which invocation and turn a model request belongs to, and what was served (SPEC P-5).

Matching rule (``design/rehearsal.md`` §Matching):

* The API picks the queue: Anthropic Messages requests come from Claude Code (roles
  ``worker`` and ``repair``), OpenAI Responses requests from Codex (role ``reviewer``). Each
  queue holds the scenario's invocations of those roles, in file order.
* A conversation is identified by the session id the CLI sends (Claude:
  ``X-Claude-Code-Session-Id``; Codex: ``session-id``). The first request of an unseen
  session binds it to the next unbound invocation of its queue.
* The turn is derived from the request content, not counted by the server: Claude's
  number of assistant messages, Codex's number of ``function_call`` items. A retried
  request therefore gets the same answer again.

Anything outside the script (no session id, a queue already exhausted, a turn past the
invocation's end, a request without the key) is a *violation*: answered with an HTTP error
and kept, so :meth:`ScriptBook.problems` reports it after the run.
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from pydantic import Field

from factory.models import StrictModel
from factory.rehearsal.scenario import CLAUDE_ROLES, CODEX_ROLES, Scenario

Api = Literal["anthropic", "openai"]
Outcome = Literal[
    "scripted",
    "auxiliary",
    "startup",
    "websocket-refused",
    "not-found",
    "unauthorized",
    "violation",
    "too-large",
]


class ScriptViolation(Exception):
    """A request the scenario cannot answer (internal; turned into an HTTP 400 + a record)."""


class RehearsalRequest(StrictModel):
    """One request the scripted model served (evidence; secrets removed).

    Attributes:
        seq: 0-based arrival order.
        headers: request headers, lower-cased, without ``authorization``/``x-api-key``.
        authorized: whether it carried the rehearsal key.
        body_sha256: hex SHA-256 of the (decoded) body; ``body_bytes`` its size in bytes.
        outcome: how it was answered; ``invocation``/``turn`` for scripted answers.
        tool_result: the newest tool result the CLI reported back, cut to 2048 chars.
    """

    seq: int
    method: str
    path: str
    headers: dict[str, str]
    authorized: bool
    body_sha256: str
    body_bytes: int
    status: int
    outcome: Outcome
    invocation: int | None = None
    turn: int | None = None
    tool_result: str | None = None
    note: str = ""


class Progress(StrictModel):
    """How far one invocation of the scenario got."""

    invocation: int
    role: str
    turns: int
    served_turns: tuple[int, ...] = Field(default=())
    session: str | None = None

    @property
    def complete(self) -> bool:
        return set(self.served_turns) == set(range(self.turns))


class ScriptBook:
    """Thread-safe scenario state shared by the server's handler threads."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._lock = threading.Lock()
        self._queues: dict[Api, tuple[int, ...]] = {
            "anthropic": scenario.queue(CLAUDE_ROLES),
            "openai": scenario.queue(CODEX_ROLES),
        }
        self._bound: dict[Api, dict[str, int]] = {"anthropic": {}, "openai": {}}
        self._served: dict[int, set[int]] = {i: set() for i in range(len(scenario.invocations))}
        self._requests: list[RehearsalRequest] = []
        self._violations: list[str] = []

    def next_seq(self) -> int:
        with self._lock:
            return len(self._requests)

    def claim(self, api: Api, session: str | None, turn: int) -> tuple[int, int]:
        """Bind ``session`` (if new) and mark ``turn`` served; return ``(invocation, turn)``.

        Raises:
            ScriptViolation: no session id, no invocation left, or turn past the end.
        """
        if not session:
            raise ScriptViolation(f"{api} request carries no session id; cannot match it")
        with self._lock:
            bound = self._bound[api]
            if session not in bound:
                queue = self._queues[api]
                if len(bound) >= len(queue):
                    raise ScriptViolation(
                        f"{api} conversation #{len(bound) + 1} but the scenario has "
                        f"only {len(queue)} for that API"
                    )
                bound[session] = queue[len(bound)]
            index = bound[session]
            turns = self.scenario.invocations[index].turns
            if turn >= turns:
                raise ScriptViolation(
                    f"invocation {index} asked for turn {turn} but has only {turns}"
                )
            self._served[index].add(turn)
            return index, turn

    def violate(self, message: str) -> None:
        with self._lock:
            self._violations.append(message)

    def record(self, fields: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(RehearsalRequest(seq=len(self._requests), **fields))

    @property
    def requests(self) -> tuple[RehearsalRequest, ...]:
        with self._lock:
            return tuple(self._requests)

    @property
    def violations(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._violations)

    def progress(self) -> tuple[Progress, ...]:
        """Per-invocation progress, in scenario order."""
        with self._lock:
            sessions = {i: s for api in self._bound.values() for s, i in api.items()}
            return tuple(
                Progress(
                    invocation=i,
                    role=inv.role,
                    turns=inv.turns,
                    served_turns=tuple(sorted(self._served[i])),
                    session=sessions.get(i),
                )
                for i, inv in enumerate(self.scenario.invocations)
            )

    def problems(self) -> tuple[str, ...]:
        """Violations, then every invocation whose turns were not all served."""
        unserved = tuple(
            f"invocation {p.invocation} ({p.role}) served turns {list(p.served_turns)} of {p.turns}"
            for p in self.progress()
            if not p.complete
        )
        return self.violations + unserved
