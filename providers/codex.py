"""The closed ``codex`` profile: Codex as the read-only reviewer (SPEC P-2…P-4).

argv (fixed; verified flags of Codex 0.171.0, ``reference/provider-clis.md`` §3, §4):
``exec --sandbox read-only -c approval_policy="never" -c
shell_environment_policy.inherit="core" -c
shell_environment_policy.set.GIT_OPTIONAL_LOCKS="0" --json --ephemeral --color never
--ignore-user-config --ignore-rules -C <worktree> --output-schema <file> -o <file> -``
with the prompt on stdin then EOF (an open stdin hangs Codex; ``-`` also stops a prompt
equal to a subcommand name from being parsed as one).

Result: the JSONL events must reach ``turn.completed``; the ``-o`` file must then hold a
verdict that *we* validate against :data:`VERDICT_SCHEMA` (the CLI does not). Codex never
exits without network, so the deadline decides that case; repeated "Reconnecting" /
"waiting for network" events turn a timeout into ``provider-network``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import trio
from pydantic import ValidationError

from factory.errors import ProviderFailure
from factory.models import StrictModel
from factory.proc import MIB, ProcessFailure
from factory.proc.runner import TIMEOUT
from factory.provider_api import (
    PROVIDER_AUTH_REQUIRED,
    PROVIDER_FAILED,
    PROVIDER_NETWORK,
    PROVIDER_PROTOCOL,
    ProviderResult,
    RehearsalRoute,
    Route,
    Spool,
    Verdict,
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

NAME: Final = "codex"
STDOUT_CAP = 8 * MIB
VERDICT_CAP = 256 * 1024
GRACE_S = 3.0
AUTHORITY = "read-only-sandbox"
REHEARSAL_PROVIDER = "factory_rehearsal"
REHEARSAL_KEY_VAR = "FACTORY_REHEARSAL_API_KEY"
READ_ONLY_GIT = ("GIT_OPTIONAL_LOCKS", "0")
"""The reviewer's git never takes optional locks: a read command (``git status``,
``git diff``) then does not write the refreshed index back (SPEC P-3; design/agent.md).
Set in the CLI's own environment and, since ``inherit="core"`` drops it, in its shell
tools' (``shell_environment_policy.set``)."""
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES"]},
        "summary": {"type": "string"},
    },
    "required": ["verdict", "summary"],
    "additionalProperties": False,
}


class _VerdictDoc(StrictModel):
    verdict: Literal["APPROVE", "REQUEST_CHANGES"]
    summary: str


def _toml(value: str) -> str:
    # A JSON string literal is a valid TOML basic string.
    return json.dumps(value)


def route_args(route: Route) -> list[str]:
    """``-c`` overrides selecting the route's model provider (rehearsal only).

    The rehearsal provider posts to ``<base_url>/v1/responses`` (Responses wire API) with
    the key taken from :data:`REHEARSAL_KEY_VAR`, which :func:`build_env` sets.
    """
    if not isinstance(route, RehearsalRoute):
        return []
    p = f"model_providers.{REHEARSAL_PROVIDER}"
    return [
        "-c",
        f"model_provider={_toml(REHEARSAL_PROVIDER)}",
        "-c",
        f"{p}.name={_toml('factory rehearsal')}",
        "-c",
        f"{p}.base_url={_toml(route.base_url.rstrip('/') + '/v1')}",
        "-c",
        f"{p}.env_key={_toml(REHEARSAL_KEY_VAR)}",
        "-c",
        f"{p}.wire_api={_toml('responses')}",
    ]


def build_argv(
    binary: Path, *, worktree: Path, schema_file: Path, verdict_file: Path, route: Route
) -> list[str]:
    """The exact reviewer argv; the prompt goes on stdin (the trailing ``-``)."""
    return [
        str(binary),
        "exec",
        "--sandbox",
        "read-only",
        "-c",
        'approval_policy="never"',
        "-c",
        'shell_environment_policy.inherit="core"',
        "-c",
        f"shell_environment_policy.set.{READ_ONLY_GIT[0]}={_toml(READ_ONLY_GIT[1])}",
        "--json",
        "--ephemeral",
        "--color",
        "never",
        "--ignore-user-config",
        "--ignore-rules",
        "-C",
        str(worktree),
        "--output-schema",
        str(schema_file),
        "-o",
        str(verdict_file),
        *route_args(route),
        "-",
    ]


def build_env(route: Route, environ: Mapping[str, str]) -> dict[str, str]:
    """The complete child env for ``route`` (SPEC P-3).

    Rehearsal: ``CODEX_HOME=<config_root>/codex`` and ``HOME=<config_root>/home``
    (created; Codex refuses a missing ``CODEX_HOME``) and the throwaway key in
    :data:`REHEARSAL_KEY_VAR`. Subscription: the caller's ``HOME`` (``~/.codex`` login).
    """
    env = caller_base(environ)
    env[READ_ONLY_GIT[0]] = READ_ONLY_GIT[1]
    route_home(route, env)
    if isinstance(route, RehearsalRoute):
        env["CODEX_HOME"] = str(rehearsal_home(route, "codex"))
        env[REHEARSAL_KEY_VAR] = route.api_key
    return env


@dataclass(slots=True)
class Events:
    """What Codex's ``--json`` events said (pure parse of stdout)."""

    terminal: Literal["completed", "failed"] | None = None
    failure: str = ""
    reconnects: int = 0
    waiting_for_network: bool = False
    events: int = 0
    garbage_lines: int = 0


def parse_events(stdout: bytes | Iterable[bytes]) -> Events:
    """Parse Codex JSONL (bytes, or the lines of a spooled capture); the first
    ``turn.completed``/``turn.failed`` is terminal. Only what decides is kept."""
    out = Events()
    garbage = [0]
    for event in iter_json_lines(stdout, garbage):
        out.events += 1
        kind = event.get("type")
        if kind == "error":
            message = str(event.get("message", ""))
            if message.startswith("Reconnecting"):
                out.reconnects += 1
                out.waiting_for_network |= "waiting for network" in message
            elif not out.failure:
                out.failure = message
        elif kind in ("turn.completed", "turn.failed") and out.terminal is None:
            out.terminal = "completed" if kind == "turn.completed" else "failed"
            if kind == "turn.failed":
                err = event.get("error")
                msg = err.get("message") if isinstance(err, dict) else None
                out.failure = str(msg or out.failure or "turn failed")
    out.garbage_lines = garbage[0]
    return out


def parse_verdict(data: bytes) -> Verdict:
    """Validate the ``-o`` file against :data:`VERDICT_SCHEMA` (exactly two keys).

    Raises:
        ProviderFailure: ``provider-protocol`` for empty, non-JSON or non-conforming data,
            a duplicated key, or a summary that is not valid Unicode (lone surrogate).
    """
    if not data.strip():
        raise PROVIDER_PROTOCOL("codex wrote no verdict (empty -o file)")
    try:
        doc = json.loads(data, object_pairs_hook=_refuse_duplicate_keys)
        parsed = _VerdictDoc.model_validate(doc)
        parsed.summary.encode("utf-8")  # a lone surrogate (\ud800) is not text
    except (ValueError, ValidationError, RecursionError) as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            reason = f"{first.get('msg', 'invalid')} at {where}" if where else "not a JSON object"
        elif isinstance(exc, _DuplicateKey):
            reason = str(exc)
        elif isinstance(exc, UnicodeEncodeError):
            reason = "summary is not valid Unicode (lone surrogate)"
        elif isinstance(exc, RecursionError):
            reason = "nested too deeply"
        else:
            reason = "not JSON"
        raise PROVIDER_PROTOCOL(f"codex verdict violates the verdict schema: {reason}") from exc
    return Verdict(verdict=parsed.verdict, summary=parsed.summary)


class _DuplicateKey(ValueError):
    pass


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Parsers disagree on which duplicate wins; the stored verdict bytes must mean one
    # thing to anyone who re-reads them.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"duplicate key {key!r}")
        out[key] = value
    return out


def classify(events: Events, exit_code: int, stderr: bytes) -> Problem | None:
    """None when the turn completed, else ``(P-4 code, one-line message)``."""
    if events.terminal == "completed":
        if exit_code != 0:
            return PROVIDER_PROTOCOL, (
                f"codex exited {exit_code} after turn.completed: {stderr_tail(stderr)}"
            )
        return None
    if events.terminal == "failed":
        msg = events.failure[:200]
        low = msg.lower()
        if "401" in msg or "403" in msg or "unauthorized" in low or "not logged in" in low:
            return PROVIDER_AUTH_REQUIRED, (f"codex was refused by its API ({msg})")
        if "connection" in low or "network" in low or "stream disconnected" in low:
            return PROVIDER_NETWORK, f"codex could not reach its API: {msg}"
        return PROVIDER_FAILED, f"codex turn failed: {msg}"
    if b"Not logged in" in stderr:
        return PROVIDER_AUTH_REQUIRED, "codex is not logged in"
    if exit_code == 0:
        return PROVIDER_PROTOCOL, "codex exited 0 without a turn.completed event"
    return PROVIDER_FAILED, f"codex exited {exit_code}: {stderr_tail(stderr)}"


class CodexProfile(ClosedProfile):
    """Closed ``codex`` profile (role ``reviewer``)."""

    name = NAME

    async def login_status(self, resolved: Resolved, env: Mapping[str, str]) -> tuple[bool, str]:
        """``codex login status``: (logged in, its one-line message)."""
        try:
            res = await self._probe(resolved, env, "login", "status")
        except ProcessFailure as exc:
            return False, f"login status probe failed ({exc.code})"
        text = (res.stdout + b"\n" + res.stderr).decode("utf-8", "replace")
        lines = [
            ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("WARNING")
        ]
        return res.exit_code == 0, (lines[-1] if lines else f"exit {res.exit_code}")

    async def run_reviewer(
        self,
        *,
        worktree: Path,
        prompt: str,
        timeout_ms: int,
        route: Route,
        scratch: Path,
        spool: Spool | None = None,
    ) -> ProviderResult:
        """One fresh read-only review of ``worktree`` (see module doc).

        Raises:
            ProviderFailure: a P-4 code, after every child process is gone; once the
                binary is resolved it carries what the invocation left behind
                (:func:`~factory.provider_api.partial_of`).
        """
        return await self._run(
            worktree, prompt, timeout_ms, route, scratch, spool, VERDICT_SCHEMA, parse_verdict
        )

    async def run_structured(
        self,
        *,
        worktree: Path,
        prompt: str,
        timeout_ms: int,
        route: Route,
        scratch: Path,
        schema: Mapping[str, Any],
        spool: Spool | None = None,
    ) -> ProviderResult:
        """One fresh read-only run whose final message must follow ``schema``
        (``--output-schema``); the ``-o`` bytes are returned *unparsed* as
        ``outputs["verdict"]`` and the caller validates them (the CLI does not).

        Raises:
            ProviderFailure: as :meth:`run_reviewer` (``provider-protocol`` for a missing
                or oversized ``-o`` file).
        """
        return await self._run(worktree, prompt, timeout_ms, route, scratch, spool, schema, None)

    async def _run(
        self,
        worktree: Path,
        prompt: str,
        timeout_ms: int,
        route: Route,
        scratch: Path,
        spool: Spool | None,
        schema: Mapping[str, Any],
        parse: Callable[[bytes], Verdict] | None,
    ) -> ProviderResult:
        started = trio.current_time()
        resolved = self.resolve()
        env = build_env(route, self._fx.env())
        work = Path(tempfile.mkdtemp(prefix="codex-review-", dir=scratch))
        schema_file, verdict_file = work / "verdict-schema.json", work / "verdict.json"
        argv = build_argv(
            resolved.path,
            worktree=worktree,
            schema_file=schema_file,
            verdict_file=verdict_file,
            route=route,
        )
        replacements = {
            str(resolved.path): NAME,
            str(worktree): "<worktree>",
            str(work): "<scratch>",
        }
        if isinstance(route, RehearsalRoute):
            replacements[route.base_url.rstrip("/")] = "<rehearsal-base-url>"
        call = Invocation(
            NAME, "reviewer", shape(argv, replacements), AUTHORITY, env_names=tuple(sorted(env))
        )
        try:
            call.cli_version = await probe_version(resolved.path, env, self._fx.runner)
        except ProviderFailure as exc:
            call.failed(exc, None)  # what is known so far: the argv shape
            raise
        if not isinstance(route, RehearsalRoute):
            logged_in, message = await self.login_status(resolved, env)
            if not logged_in:
                failure = PROVIDER_AUTH_REQUIRED(f"codex has no login here ({message})")
                raise call.failed(failure, None)
        schema_file.write_text(json.dumps(schema, sort_keys=True))
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
        problem = classify(parse_events(res.out.lines()), res.exit_code, res.err.read())
        if problem is not None:
            raise call.failed(problem_failure(route, problem), res)
        try:
            raw = _read_capped(verdict_file)
            call.outputs["verdict"] = raw
            verdict = parse(raw) if parse is not None else None
        except ProviderFailure as exc:
            call.failed(exc, res)
            raise
        return call.result(res, verdict=verdict)

    @staticmethod
    def _from_process_failure(exc: ProcessFailure) -> ProviderFailure:
        res = exc.result
        if exc.spec is TIMEOUT and res is not None:
            events = parse_events(res.out.lines())
            if events.reconnects:
                return PROVIDER_NETWORK(
                    f"codex was still reconnecting at the deadline ({events.reconnects} "
                    "'Reconnecting' events)"
                )
        return process_failure(exc, NAME)


def _read_capped(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(VERDICT_CAP + 1)
    except FileNotFoundError:
        raise PROVIDER_PROTOCOL("codex left no verdict file") from None
    except OSError as exc:  # a folder, FIFO or unreadable file where the verdict should be
        raise PROVIDER_PROTOCOL(f"codex's verdict file is not readable ({exc.strerror})") from None
    if len(data) > VERDICT_CAP:
        raise PROVIDER_PROTOCOL(f"codex verdict is larger than {VERDICT_CAP} bytes")
    return data
