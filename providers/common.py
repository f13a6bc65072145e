"""What both closed profiles share: child env bases, the version probe, failure mapping.

Child environments (SPEC P-3) start empty. From the caller only :data:`CALLER_ALLOW`
passes (path, home, identity, locale, temp folder). Everything that routes,
authenticates or re-configures a CLI — ``ANTHROPIC_*``, ``CLAUDE_CODE_*``, ``OPENAI_*``,
``CODEX_*``, cloud credentials, ``GIT_*``, parent-agent markers, proxy and CA variables,
``XDG_*`` — is never read from the caller. Route values (a loopback endpoint, a
throwaway key, private config homes) come only from the :class:`RehearsalRoute` object.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import trio

from factory.errors import Code, ProviderFailure
from factory.proc import BASE_ALLOW, MIB, ProcessFailure, RunResult, RunSpec, pick, run
from factory.proc.runner import LAUNCH_FAILED, OUTPUT_LIMIT, TIMEOUT
from factory.provider_api import (
    PROVIDER_AUTH_REQUIRED,
    PROVIDER_FAILED,
    PROVIDER_NETWORK,
    PROVIDER_NOT_FOUND,
    PROVIDER_OUTPUT_LIMIT,
    PROVIDER_TIMEOUT,
    ApiRoute,
    ProviderResult,
    RehearsalRoute,
    Role,
    Route,
    Spool,
    with_partial,
)
from providers.resolve import Resolved, resolve

CALLER_ALLOW: tuple[str, ...] = BASE_ALLOW
VERSION_TIMEOUT_S = 20.0
PROBE_CAP_BYTES = 64 * 1024
STDERR_CAP = MIB
"""stderr bytes kept per invocation; stderr is diagnostics, so more is truncation (the
rest counted, not kept), never a failure of the phase."""

Runner = Callable[[RunSpec], Awaitable[RunResult]]


@dataclass(frozen=True, slots=True)
class Effects:
    """Injected effects of a profile, with real defaults.

    Attributes:
        environ: the caller's environment, read only through :data:`CALLER_ALLOW` and
            for ``PATH`` resolution; None means ``os.environ`` at call time.
        runner: the supervised runner (:func:`factory.proc.run`).
        fallback_dirs: folders searched after ``PATH`` (default: the checkout's
            ``node_modules/.bin``); None means the default.
        grace_s: SIGTERM→SIGKILL grace in seconds; None means the profile's default.
        checkout_first: search the checkout's pinned ``node_modules/.bin`` before
            ``PATH`` (contract tests of the pinned CLIs, SPEC P-6).
    """

    environ: Mapping[str, str] | None = None
    runner: Runner = run
    fallback_dirs: tuple[Path, ...] | None = None
    grace_s: float | None = None
    checkout_first: bool = False

    def env(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def resolve(self, name: Literal["claude", "codex"]) -> Resolved:
        """Resolve ``name`` with these effects (see :mod:`providers.resolve`)."""
        path_env = self.env().get("PATH")
        return resolve(
            name,
            path_env=path_env,
            fallback_dirs=self.fallback_dirs,
            checkout_first=self.checkout_first,
            environ=self.env(),
        )


def caller_base(environ: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed part of the caller's environment (SPEC P-3)."""
    return pick(environ, CALLER_ALLOW)


def rehearsal_home(route: RehearsalRoute | ApiRoute, sub: str) -> Path:
    """``route.config_root/<sub>``, created (private, 0700) if missing."""
    folder = Path(route.config_root) / sub
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def route_home(route: Route, base: dict[str, str]) -> None:
    """Point ``HOME`` at a private folder on the rehearsal and api routes, so no real login
    store or user configuration of the caller can be read or written there."""
    if isinstance(route, RehearsalRoute | ApiRoute):
        base["HOME"] = str(rehearsal_home(route, "home"))


_version_cache: dict[tuple[str, int, int], str] = {}


async def probe_version(binary: Path, env: Mapping[str, str], runner: Runner) -> str:
    """First line of ``<binary> --version`` (SPEC P-6), cached per binary identity.

    Raises:
        ProviderFailure: ``provider-not-found`` when the binary cannot run or says nothing.
    """
    try:
        st = binary.stat()
        key = (str(binary), st.st_mtime_ns, st.st_size)
    except OSError as exc:
        raise PROVIDER_NOT_FOUND(f"{binary} is not readable: {exc.strerror}") from exc
    if key in _version_cache:
        return _version_cache[key]
    try:
        res = await runner(
            RunSpec(
                argv=[str(binary), "--version"],
                env=env,
                timeout_s=VERSION_TIMEOUT_S,
                stdout_cap=PROBE_CAP_BYTES,
                stderr_cap=PROBE_CAP_BYTES,
                grace_s=1.0,
            )
        )
    except ProcessFailure as exc:
        raise PROVIDER_NOT_FOUND(f"{binary} --version failed ({exc.code})") from exc
    line = res.stdout.decode("utf-8", "replace").strip().splitlines()
    if res.exit_code != 0 or not line:
        raise PROVIDER_NOT_FOUND(f"{binary} --version exited {res.exit_code} without a version")
    _version_cache[key] = line[0].strip()
    return _version_cache[key]


def process_failure(exc: ProcessFailure, profile: str) -> ProviderFailure:
    """The P-4 failure for a runner failure when no better evidence exists. The runner's
    words name the program already; the profile is named only when they do not, so a
    message never stutters (``claude: claude did not finish``)."""
    code = {
        TIMEOUT: PROVIDER_TIMEOUT,
        OUTPUT_LIMIT: PROVIDER_OUTPUT_LIMIT,
        LAUNCH_FAILED: PROVIDER_NOT_FOUND,
    }.get(exc.spec, PROVIDER_FAILED)
    named = exc.fact.startswith((f"{profile} ", f"{profile}:", f"'{profile}'"))
    return code(exc.fact if named else f"{profile}: {exc.fact}")


def stderr_tail(data: bytes, limit: int = 200) -> str:
    """Last non-empty stderr line, shortened, for a one-line error message."""
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return "no stderr"
    tail = lines[-1]
    return tail if len(tail) <= limit else tail[: limit - 1] + "…"


def shape(argv: list[str], replacements: Mapping[str, str]) -> tuple[str, ...]:
    """``argv`` with private values (paths, endpoints) replaced by placeholders."""
    out = []
    for arg in argv:
        for secret, placeholder in replacements.items():
            if secret:
                arg = arg.replace(secret, placeholder)
        out.append(arg)
    return tuple(out)


Problem = tuple[Code[ProviderFailure], str]
"""What a profile's ``classify`` found: the P-4 code and what happened."""


def problem_failure(route: Route, problem: Problem) -> ProviderFailure:
    """The failure for ``problem``. On the rehearsal route, auth and network failures
    concern the factory's own loopback server, not a login: the fact says so."""
    code, fact = problem
    if isinstance(route, RehearsalRoute) and code in (PROVIDER_AUTH_REQUIRED, PROVIDER_NETWORK):
        return code(f"rehearsal model server at {route.base_url}: {fact}")
    return code(fact)


async def run_within_deadline(
    fx: Effects,
    *,
    argv: list[str],
    env: Mapping[str, str],
    worktree: Path,
    prompt: str,
    started: float,
    timeout_ms: int,
    stdout_cap: int,
    grace_s: float,
    on_failure: Callable[[ProcessFailure], ProviderFailure],
    spool: Spool | None = None,
) -> RunResult:
    """Run a profile's CLI with the prompt on stdin (then closed) under the time left of
    ``timeout_ms`` since ``started`` (trio clock, s); the version and login probes already
    spent part of it, so the whole invocation stays within its deadline (SPEC P-1).

    stdout (the structured result) over ``stdout_cap`` stops the run; stderr over
    :data:`STDERR_CAP` is kept truncated and the run goes on. With ``spool``, both streams
    are written to its files as they arrive.

    Raises:
        ProviderFailure: ``on_failure`` of the runner's typed failure, after the tree is gone.
        SpoolFailure: the spool files could not be created or written.
    """
    remaining = max(0.1, timeout_ms / 1000 - (trio.current_time() - started))
    spec = RunSpec(
        argv=argv,
        env=env,
        timeout_s=remaining,
        cwd=worktree,
        stdin=prompt.encode("utf-8"),
        stdout_cap=stdout_cap,
        stderr_cap=STDERR_CAP,
        stderr_overflow="drain",
        stdout_spool=spool.path("stdout") if spool is not None else None,
        stderr_spool=spool.path("stderr") if spool is not None else None,
        grace_s=grace_s if fx.grace_s is None else fx.grace_s,
    )
    try:
        return await fx.runner(spec)
    except ProcessFailure as exc:
        raise on_failure(exc) from exc


@dataclass(slots=True)
class Invocation:
    """What one profile invocation has established so far, to describe it in its result
    or, when it fails, in the failure's partial result (SPEC A-7: a failed phase keeps
    its CLI version, argv shape and captured streams)."""

    profile: str
    role: Role
    argv_shape: tuple[str, ...]
    authority: str
    cli_version: str | None = None
    outputs: dict[str, bytes] = field(default_factory=dict)
    env_names: tuple[str, ...] | None = None

    def result(self, res: RunResult | None, **extra: Any) -> ProviderResult:
        return ProviderResult(
            profile=self.profile,
            role=self.role,
            cli_version=self.cli_version,
            argv_shape=self.argv_shape,
            exit_code=res.exit_code if res is not None else None,
            duration_ms=res.duration_ms if res is not None else 0,
            outputs=dict(self.outputs),
            streams={"stdout": res.out, "stderr": res.err} if res is not None else {},
            requested_authority=self.authority,
            swept_processes=res.sweep.swept if res is not None else None,
            env_names=self.env_names,
            **extra,
        )

    def failed(self, error: ProviderFailure, res: RunResult | None) -> ProviderFailure:
        """``error`` carrying this invocation's partial result."""
        return with_partial(error, self.result(res))

    def from_process(
        self, mapper: Callable[[ProcessFailure], ProviderFailure]
    ) -> Callable[[ProcessFailure], ProviderFailure]:
        """``mapper`` whose failures keep what the runner captured (``exc.result``)."""
        return lambda exc: self.failed(mapper(exc), exc.result)


LOGIN_PROBE_TIMEOUT_S = 20.0


class ClosedProfile:
    """What both closed profiles share: injected effects, binary resolution, the login
    probe's supervised run. Subclassed exactly twice (``claude``, ``codex``)."""

    name: Literal["claude", "codex"]

    def __init__(self, effects: Effects | None = None) -> None:
        self._fx = effects or Effects()

    def resolve(self) -> Resolved:
        """Locate the native binary (see :mod:`providers.resolve`)."""
        return self._fx.resolve(self.name)

    async def preflight(self, route: Literal["subscription", "rehearsal", "api"]) -> str:
        """Could this profile start on ``route``? Executable found, ``--version`` answers,
        and on the subscription route a login is present — before a run creates anything
        (:class:`factory.provider_api.Preflight`). Returns the version line.

        Raises:
            ProviderFailure: ``provider-not-found``, ``provider-auth-required``.
        """
        resolved = self.resolve()
        version = await probe_version(resolved.path, caller_base(self._fx.env()), self._fx.runner)
        if route == "subscription":
            present, detail = await self.login_present(resolved)
            if not present:
                raise PROVIDER_AUTH_REQUIRED(f"{self.name} has no login here ({detail})")
        return version

    async def login_present(self, resolved: Resolved) -> tuple[bool, str]:
        """Whether the subscription login is there (False only when the CLI says so), and
        what said it. Each profile asks its own CLI."""
        raise NotImplementedError

    async def _probe(self, resolved: Resolved, env: Mapping[str, str], *args: str) -> RunResult:
        """Run ``<binary> ARGS`` (a login probe) under a short deadline.

        Raises:
            ProcessFailure: the probe could not run or finish.
        """
        return await self._fx.runner(
            RunSpec(
                argv=[str(resolved.path), *args],
                env=env,
                timeout_s=LOGIN_PROBE_TIMEOUT_S,
                grace_s=1.0,
            )
        )


def json_lines(source: bytes | Iterable[bytes]) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of a JSONL stream, and how many non-blank lines were not objects.

    A truncated last line (output cap or kill) counts as garbage, never as an error: the
    caller decides on the events it did get. Holds every object: for a spooled stream use
    :func:`iter_json_lines`.
    """
    garbage = [0]
    objects = list(iter_json_lines(source, garbage))
    return objects, garbage[0]


def iter_json_lines(
    source: bytes | Iterable[bytes], garbage: list[int]
) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL stream one at a time (a spool is never read whole);
    ``garbage[0]`` counts the non-blank lines that were not objects. Nesting deeper than
    the parser's limit is garbage too, not a crash."""
    lines = source.splitlines() if isinstance(source, bytes) else source
    for raw in lines:
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            garbage[0] += 1
            continue
        if isinstance(event, dict):
            yield event
        else:
            garbage[0] += 1
