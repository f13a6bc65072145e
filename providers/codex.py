"""The closed ``codex`` profile: Codex as the read-only reviewer (SPEC P-2…P-4).

argv (fixed; verified flags of Codex 0.171.0, ``reference/provider-clis.md`` §3, §4):
``exec --sandbox read-only -c approval_policy="never" -c
shell_environment_policy.inherit="core" -c
shell_environment_policy.set.GIT_OPTIONAL_LOCKS="0" --json --ephemeral --color never
--ignore-user-config --ignore-rules -C <worktree> --output-schema <file> -o <file> -``
with the prompt on stdin then EOF (an open stdin hangs Codex; ``-`` also stops a prompt
equal to a subcommand name from being parsed as one).

Result: the JSONL events must reach ``turn.completed``; the ``-o`` file must then hold a
verdict that *we* validate against the verdict schema (the CLI does not): both are read by
the pure parsers of :mod:`providers.codex_output`. Codex never
exits without network, so the deadline decides that case; repeated "Reconnecting" /
"waiting for network" events turn a timeout into ``provider-network``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import trio

from factory.choices import Choices
from factory.errors import ProviderFailure
from factory.proc import MIB, ProcessFailure
from factory.proc.runner import TIMEOUT
from factory.provider_api import (
    PROVIDER_AUTH_REQUIRED,
    PROVIDER_NETWORK,
    PROVIDER_PROTOCOL,
    ApiRoute,
    ProviderResult,
    RehearsalRoute,
    Route,
    Spool,
    SubscriptionRoute,
    Verdict,
)
from providers.codex_output import VERDICT_SCHEMA, classify, parse_events, parse_verdict
from providers.common import (
    ClosedProfile,
    Invocation,
    caller_base,
    probe_version,
    problem_failure,
    process_failure,
    rehearsal_home,
    route_home,
    run_within_deadline,
    shape,
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
    binary: Path,
    *,
    worktree: Path,
    schema_file: Path,
    verdict_file: Path,
    route: Route,
    model: str | None = None,
) -> list[str]:
    """The exact reviewer argv; the prompt goes on stdin (the trailing ``-``). ``model``
    (checked by :mod:`factory.choices`) is the user's ``--reviewer-model``."""
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
        *([] if model is None else ["-m", model]),
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
    elif isinstance(route, ApiRoute):
        env["CODEX_HOME"] = str(rehearsal_home(route, "codex"))
        env["CODEX_API_KEY"] = route.codex_api_key
    return env


class CodexProfile(ClosedProfile):
    """Closed ``codex`` profile (role ``reviewer``)."""

    name = NAME
    choices: Choices = Choices()

    def with_choices(self, choices: Choices) -> CodexProfile:
        """This profile with the user's ``--reviewer-model``."""
        chosen = CodexProfile(self._fx)
        chosen.choices = choices
        return chosen

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

    async def login_present(self, resolved: Resolved) -> tuple[bool, str]:
        """``codex login status`` on the subscription route's environment (as the run
        itself decides)."""
        return await self.login_status(resolved, build_env(SubscriptionRoute(), self._fx.env()))

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
            model=self.choices.reviewer_model,
        )
        call = _invocation(
            argv, env, route, {resolved.path: NAME, worktree: "<worktree>", work: "<scratch>"}
        )
        try:
            call.cli_version = await probe_version(resolved.path, env, self._fx.runner)
        except ProviderFailure as exc:
            call.failed(exc, None)  # what is known so far: the argv shape
            raise
        if isinstance(route, SubscriptionRoute):  # 'login status' ignores CODEX_API_KEY
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


def _invocation(
    argv: list[str], env: Mapping[str, str], route: Route, names: Mapping[Path, str]
) -> Invocation:
    """The reviewer invocation's record: its argv with paths (and the rehearsal URL) replaced
    by stable names, and the names of its environment."""
    replacements = {str(path): name for path, name in names.items()}
    if isinstance(route, RehearsalRoute):
        replacements[route.base_url.rstrip("/")] = "<rehearsal-base-url>"
    return Invocation(
        NAME, "reviewer", shape(argv, replacements), AUTHORITY, env_names=tuple(sorted(env))
    )


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
