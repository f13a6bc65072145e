"""The closed ``claude`` profile: Claude Code as worker and repair agent (SPEC P-2…P-4).

argv (fixed; nothing configurable — verified flags of Claude Code 2.1.332, see
``reference/provider-clis.md`` §2, §4): ``-p`` with the prompt on stdin, stream-json
events (``--verbose`` is required with it), ``--permission-mode acceptEdits`` (never
``--dangerously-skip-permissions``: refused as root) with an explicit tool allow/deny
list whose file tools are scoped to the worktree (``Read(./**)`` …),
``--setting-sources user`` so repository hooks and settings do not run,
``--strict-mcp-config`` (no MCP servers), ``--no-session-persistence``, turn and budget
caps, and the profile's fixed rules in ``--append-system-prompt``.

Result: the last ``result`` event decides, on ``is_error`` and ``terminal_reason`` —
never on ``subtype`` or the exit code alone, since API failures arrive as
``subtype: "success"`` with ``is_error: true`` (SPEC P-4).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio

from factory.choices import BUDGET_USD, REPAIR_TURNS, WORKER_TURNS, Choices
from factory.errors import ProviderFailure
from factory.proc import MIB, ProcessFailure
from factory.proc.runner import TIMEOUT
from factory.provider_api import (
    PROVIDER_AUTH_REQUIRED,
    PROVIDER_FAILED,
    PROVIDER_NETWORK,
    PROVIDER_PROTOCOL,
    ApiRoute,
    ProviderResult,
    RehearsalRoute,
    Role,
    Route,
    Spool,
    SubscriptionRoute,
)
from providers.common import (
    ClosedProfile,
    Invocation,
    Problem,
    caller_base,
    iter_json_lines,
    probe_version,
    problem_failure,
    process_failure,
    rehearsal_home,
    route_home,
    run_within_deadline,
    shape,
    stderr_tail,
)
from providers.resolve import Resolved

NAME: Final = "claude"
ROLES: tuple[Role, ...] = ("worker", "repair")
# File tools are scoped to the working folder ("./**" = relative to cwd, the worktree).
# Unscoped "Read"/"Write"/"Edit"/"Glob"/"Grep" would allow them on *any* path the user can
# reach (observed with 2.1.332: a scripted Write of ../x and a Read of a file beside the
# worktree both succeeded); scoped, those are denied and in-worktree use still works.
ALLOWED_TOOLS = (
    "Read(./**),Edit(./**),Write(./**),Glob(./**),Grep(./**),"
    "Bash(git status:*),Bash(git diff:*),Bash(pytest:*)"
)
DISALLOWED_TOOLS = "WebFetch,WebSearch"
MAX_TURNS: Mapping[str, int] = {"worker": WORKER_TURNS, "repair": REPAIR_TURNS}
MAX_BUDGET_USD = BUDGET_USD
STDOUT_CAP = 16 * MIB
GRACE_S = 3.0
AUTHORITY = "accept-edits-in-worktree"
WORKER_RULES = (
    "Rules of this run (fixed by the factory): work only inside the current working "
    "folder, a git worktree. Edit files with your tools; do not commit, push, tag, "
    "switch branches, stash or change git configuration; do not install packages or "
    "use the network. When done, reply with a short summary of what you changed."
)
SUBSCRIPTION_RETRIES = "3"


def build_argv(binary: Path, role: Role, choices: Choices | None = None) -> list[str]:
    """The exact argv for ``role`` (``worker`` or ``repair``); the prompt goes on stdin.
    ``choices`` (checked by :mod:`factory.choices`) set the model, the turn cap and the
    spend cap; without them, the fixed defaults."""
    if role not in ROLES:
        raise PROVIDER_FAILED(f"claude has no role {role!r}; it runs worker and repair only")
    chosen = choices or Choices()
    turns = chosen.worker_turns() if role == "worker" else chosen.repair_turns()
    model = [] if chosen.model is None else ["--model", chosen.model]
    return [
        str(binary),
        "-p",
        *model,
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--permission-prompts",
        "none",
        "--allowedTools",
        ALLOWED_TOOLS,
        "--disallowedTools",
        DISALLOWED_TOOLS,
        "--setting-sources",
        "user",
        "--strict-mcp-config",
        "--no-session-persistence",
        "--max-turns",
        str(turns),
        "--max-budget-usd",
        chosen.budget(),
        "--append-system-prompt",
        WORKER_RULES,
    ]


def build_env(route: Route, environ: Mapping[str, str]) -> dict[str, str]:
    """The complete child env for ``route`` (SPEC P-3); see :mod:`providers.common`.

    Rehearsal: ``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY`` from the route object,
    ``CLAUDE_CONFIG_DIR=<config_root>/claude`` and ``HOME=<config_root>/home`` (created),
    no retries. Subscription: the caller's ``HOME`` login store, at most 3 retries.
    """
    env = caller_base(environ)
    env["DISABLE_AUTOUPDATER"] = "1"
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    route_home(route, env)
    if isinstance(route, RehearsalRoute):
        env["ANTHROPIC_BASE_URL"] = route.base_url
        env["ANTHROPIC_API_KEY"] = route.api_key
        env["CLAUDE_CONFIG_DIR"] = str(rehearsal_home(route, "claude"))
        env["CLAUDE_CODE_MAX_RETRIES"] = "0"
    elif isinstance(route, ApiRoute):
        env["ANTHROPIC_API_KEY"] = route.anthropic_api_key
        env["CLAUDE_CONFIG_DIR"] = str(rehearsal_home(route, "claude"))
        env["CLAUDE_CODE_MAX_RETRIES"] = SUBSCRIPTION_RETRIES
    else:
        env["CLAUDE_CODE_MAX_RETRIES"] = SUBSCRIPTION_RETRIES
    return env


@dataclass(slots=True)
class Stream:
    """What the stream-json events said (pure parse of stdout)."""

    init: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    retries: int = 0
    auth_failed: bool = False
    events: int = 0
    garbage_lines: int = 0
    last_type: str = ""


def parse_stream(stdout: bytes | Iterable[bytes]) -> Stream:
    """Parse Claude's ``stream-json`` stdout (one JSON object per line), given as bytes or
    as lines (a spooled capture's :meth:`~factory.proc.capture.Captured.lines`); only the
    events that decide are kept, so a large stream costs no memory.

    A truncated last line (cap or kill) is counted as garbage, not an error.
    """
    out = Stream()
    garbage = [0]
    for event in iter_json_lines(stdout, garbage):
        out.events += 1
        kind = str(event.get("type", ""))
        sub = str(event.get("subtype", ""))
        out.last_type = f"{kind}/{sub}" if sub else kind
        if kind == "system" and sub == "init":
            out.init = event
        elif kind == "system" and sub == "api_retry":
            out.retries += 1
        elif kind == "assistant" and event.get("error") == "authentication_failed":
            out.auth_failed = True
        elif kind == "result":
            out.result = event
    out.garbage_lines = garbage[0]
    return out


def classify(stream: Stream, exit_code: int, stderr: bytes) -> Problem | None:
    """None for a usable run, else ``(P-4 code, one-line message)``.

    Usable means: a ``result`` event with ``is_error`` exactly ``false``, subtype
    ``success``, ``terminal_reason`` ``completed`` (or absent) and exit 0 (SPEC P-4).
    """
    res = stream.result
    if res is None:
        if stream.auth_failed:
            return PROVIDER_AUTH_REQUIRED, "claude is not logged in"
        if exit_code == 0:
            return PROVIDER_PROTOCOL, "claude exited 0 without a result event"
        return PROVIDER_FAILED, f"claude exited {exit_code} without a result: " + stderr_tail(
            stderr
        )
    text = str(res.get("result", ""))
    first = text.strip().splitlines()[0][:160] if text.strip() else ""
    if res.get("is_error") is True:
        status = res.get("api_error_status")
        if text.startswith("Not logged in") or stream.auth_failed or status in (401, 403):
            return PROVIDER_AUTH_REQUIRED, (f"claude: {first or 'authentication failed'}")
        if res.get("api_error") == "connection_failed" or text.startswith(
            ("API Error: Connection", "API Error: Unable to connect")
        ):
            return PROVIDER_NETWORK, f"claude could not reach its API: {first}"
        return PROVIDER_FAILED, f"claude reported an error ({res.get('terminal_reason')}): " + (
            first or str(res.get("subtype"))
        )
    if res.get("is_error") is not False:
        return PROVIDER_PROTOCOL, (
            f"claude's result event has is_error={res.get('is_error')!r}, not a boolean"
        )
    subtype = str(res.get("subtype", ""))
    if subtype != "success":
        return PROVIDER_FAILED, f"claude stopped: {subtype} ({res.get('terminal_reason')})"
    reason = res.get("terminal_reason", "completed")
    if reason != "completed":
        return PROVIDER_FAILED, f"claude ended with terminal_reason {reason!r}: " + (
            first or "no text"
        )
    if exit_code != 0:
        return PROVIDER_PROTOCOL, f"claude exited {exit_code} after a successful result"
    return None


class ClaudeProfile(ClosedProfile):
    """Closed ``claude`` profile (roles ``worker`` and ``repair``)."""

    name = NAME
    choices: Choices = Choices()

    def with_choices(self, choices: Choices) -> ClaudeProfile:
        """This profile with the user's model choices (model, turns, spend cap)."""
        chosen = ClaudeProfile(self._fx)
        chosen.choices = choices
        return chosen

    async def auth_status(self, resolved: Resolved, env: Mapping[str, str]) -> dict[str, Any]:
        """``claude auth status`` as JSON (``loggedIn``, ``authMethod`` …); ``{}`` if unreadable."""
        try:
            res = await self._probe(resolved, env, "auth", "status")
        except ProcessFailure:
            return {}
        try:
            doc = json.loads(res.stdout)
        except (ValueError, RecursionError):
            return {}
        return doc if isinstance(doc, dict) else {}

    async def login_present(self, resolved: Resolved) -> tuple[bool, str]:
        """``claude auth status`` on the subscription route's environment: False only when
        it says ``loggedIn: false`` (as the run itself decides)."""
        status = await self.auth_status(resolved, build_env(SubscriptionRoute(), self._fx.env()))
        if status.get("loggedIn") is False:
            return False, "claude auth status: not logged in"
        return True, "claude auth status"

    async def run_agent(
        self,
        *,
        role: Role,
        worktree: Path,
        prompt: str,
        timeout_ms: int,
        route: Route,
        spool: Spool | None = None,
    ) -> ProviderResult:
        """Run one worker/repair invocation in ``worktree`` (see module doc).

        Raises:
            ProviderFailure: a P-4 code, after every child process is gone; once the
                binary is resolved it carries what the invocation left behind
                (:func:`~factory.provider_api.partial_of`).
        """
        started = trio.current_time()
        resolved = self.resolve()
        env = build_env(route, self._fx.env())
        argv = build_argv(resolved.path, role, self.choices)
        call = Invocation(
            NAME,
            role,
            shape(argv, {str(resolved.path): NAME, str(worktree): "<worktree>"}),
            AUTHORITY,
            env_names=tuple(sorted(env)),
        )
        try:
            call.cli_version = await probe_version(resolved.path, env, self._fx.runner)
        except ProviderFailure as exc:
            call.failed(exc, None)  # what is known so far: the argv shape
            raise
        if not isinstance(route, RehearsalRoute):
            status = await self.auth_status(resolved, env)
            if status.get("loggedIn") is False:
                failure = PROVIDER_AUTH_REQUIRED("claude has no subscription login here")
                raise call.failed(failure, None)
        res = await run_within_deadline(
            self._fx,
            argv=argv,
            env=env,
            worktree=worktree,
            prompt=prompt,
            started=started,
            timeout_ms=timeout_ms,
            stdout_cap=STDOUT_CAP,
            grace_s=GRACE_S,
            on_failure=call.from_process(self._from_process_failure),
            spool=spool,
        )
        problem = classify(parse_stream(res.out.lines()), res.exit_code, res.err.tail(4096))
        if problem is not None:
            raise call.failed(problem_failure(route, problem), res)
        return call.result(res)

    @staticmethod
    def _from_process_failure(exc: ProcessFailure) -> ProviderFailure:
        res = exc.result
        if exc.spec is TIMEOUT and res is not None:
            stream = parse_stream(res.out.lines())
            if stream.retries and stream.last_type == "system/api_retry":
                return PROVIDER_NETWORK(
                    f"claude kept retrying its API ({stream.retries} retries) until the deadline"
                )
        return process_failure(exc, NAME)
