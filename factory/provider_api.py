"""The provider-neutral contract between the agent run and the closed profiles (SPEC P-2, P-4).

The agent run (``factory/agent``) only knows these types; ``providers/`` implements them
for exactly two CLIs; the CLI layer wires one to the other. A profile invocation either
returns a :class:`ProviderResult` or raises :class:`~factory.errors.ProviderFailure` with
one of the P-4 codes — after every process it started is gone (SPEC P-1).

Routes (SPEC P-3, P-5):

* :class:`SubscriptionRoute` — the installed CLIs' own logins in their normal stores.
* :class:`RehearsalRoute` — the scripted loopback model the factory started itself; the
  endpoint and throwaway key are injected here and can never come from the caller's env.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, Protocol, runtime_checkable

from factory.errors import ProviderFailure
from factory.proc.capture import Captured

Role = Literal["worker", "repair", "reviewer"]
VerdictValue = Literal["APPROVE", "REQUEST_CHANGES"]

# The P-4 codes: the one set every profile maps its failures onto.
_define = ProviderFailure.define
PROVIDER_NOT_FOUND = _define(
    "provider-not-found",
    "put your own CLI on PATH, or install the pinned ones (./scripts/setup in a checkout, "
    "'factory providers install' otherwise); see factory doctor",
)
PROVIDER_AUTH_REQUIRED = _define(
    "provider-auth-required",
    "log in with the CLI itself (claude: /login; codex: codex login) and check with factory "
    "doctor; on the rehearsal route, rerun: the scripted server refused the CLI",
)
PROVIDER_NETWORK = _define(
    "provider-network",
    "check the network and rerun; on the rehearsal route, the CLI could not reach the "
    "scripted loopback server",
)
PROVIDER_TIMEOUT = _define(
    "provider-timeout", "raise --timeout-ms (at most 1800000) or narrow the task"
)
PROVIDER_OUTPUT_LIMIT = _define(
    "provider-output-limit", "narrow the task so the CLI prints less, then rerun"
)
PROVIDER_PROTOCOL = _define(
    "provider-protocol", "check the CLI's version against the pin with factory doctor"
)
PROVIDER_FAILED = _define(
    "provider-failed", "read the phase's stderr evidence, then rerun", default=True
)

REHEARSAL_EXECUTION: Final = (
    "rehearsal: scripted loopback model; proves the control path, nothing about model judgement"
)
SUBSCRIPTION_EXECUTION = "subscription: the installed CLIs' own logins; real model judgement"


@dataclass(frozen=True, slots=True)
class SubscriptionRoute:
    """Default route: each CLI uses its own login from the user's profile stores."""

    name: Literal["subscription"] = "subscription"

    @property
    def execution(self) -> str:
        return SUBSCRIPTION_EXECUTION


@dataclass(frozen=True, slots=True)
class RehearsalRoute:
    """Route to the scripted loopback model (SPEC P-5).

    Attributes:
        base_url: ``http://127.0.0.1:<port>`` of the server the factory started.
        api_key: a throwaway key minted for this run; not a secret of anyone's.
        config_root: a private folder for the CLIs' config homes on this route
            (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``), so no real login is read or written.
    """

    base_url: str
    api_key: str
    config_root: Path
    name: Literal["rehearsal"] = "rehearsal"

    @property
    def execution(self) -> str:
        return REHEARSAL_EXECUTION


API_EXECUTION: Final = "api: provider API keys from a source the user named; real model judgement"


@dataclass(frozen=True, slots=True)
class ApiRoute:
    """Route on provider API keys taken only from a source the user named
    (``--credentials FILE`` or ``--credentials-env NAME``), never from the caller's
    environment by accident: Claude gets ``ANTHROPIC_API_KEY``, Codex ``CODEX_API_KEY``,
    each with a private config home under ``config_root`` so no login store is read.

    The keys are never shown (``repr=False``), recorded or passed to anything but the one
    CLI each is for; ``source`` says where they came from without them.
    """

    anthropic_api_key: str = field(repr=False)
    codex_api_key: str = field(repr=False)
    config_root: Path
    source: str
    name: Literal["api"] = "api"

    @property
    def execution(self) -> str:
        return API_EXECUTION


Route = SubscriptionRoute | RehearsalRoute | ApiRoute


@dataclass(frozen=True, slots=True)
class Verdict:
    """A reviewer verdict validated by us against the verdict schema (SPEC A-5)."""

    verdict: VerdictValue
    summary: str


@dataclass(frozen=True, slots=True)
class Spool:
    """Where an invocation writes its stdout and stderr as they arrive (SPEC A-7).

    ``<folder>/<prefix>-<stream>.spool``, each created new (0600); the agent run adopts
    them as content-addressed evidence afterwards. A factory that is killed mid-run leaves
    what was captured there.
    """

    folder: Path
    prefix: str

    def path(self, stream: str) -> Path:
        return self.folder / f"{self.prefix}-{stream}.spool"


@dataclass(frozen=True, slots=True)
class ProviderResult:
    """What one provider invocation left behind (also, partly, when it failed).

    Attributes:
        profile: ``"claude"`` or ``"codex"``.
        role: the role it ran in.
        cli_version: the ``--version`` line of the binary that ran (SPEC P-6); None only
            in a failure's partial result when the version probe itself failed.
        argv_shape: the argv with the prompt and temp paths replaced by placeholders,
            safe to put in a receipt.
        exit_code: the leader's exit status (negative: killed by that signal); None in a
            failure's partial result when the CLI never ran.
        duration_ms: wall time from spawn to the last descendant gone.
        outputs: small raw outputs held in memory by evidence name (``verdict``) —
            sensitive; stored content-addressed, never put in a receipt.
        streams: the captured ``stdout``/``stderr`` (spooled to files when a
            :class:`Spool` was given), each with its true length and truncation.
        verdict: the parsed verdict (reviewer only).
        requested_authority: what the profile asked the CLI for (e.g.
            ``"accept-edits-in-worktree"``, ``"read-only-sandbox"``).
        swept_processes: descendants still alive when the CLI's leader exited (or was
            stopped), frozen and killed by the runner; None when no CLI run got that far.
        env_names: the names (never the values) of the environment the CLI's process
            got; ``None`` when the profile does not report them.
    """

    profile: str
    role: Role
    cli_version: str | None
    argv_shape: tuple[str, ...]
    exit_code: int | None
    duration_ms: int
    outputs: dict[str, bytes] = field(default_factory=dict)
    verdict: Verdict | None = None
    requested_authority: str = ""
    streams: dict[str, Captured] = field(default_factory=dict)
    swept_processes: int | None = None
    env_names: tuple[str, ...] | None = None


def with_partial(error: ProviderFailure, partial: ProviderResult | None) -> ProviderFailure:
    """``error`` carrying what its invocation left behind (CLI version, argv shape, the
    captured streams, exit status, sweep), so the failed phase is recorded with its
    evidence (SPEC A-7, P-4). Returns ``error`` itself."""
    error.partial = partial
    return error


def partial_of(error: BaseException | None) -> ProviderResult | None:
    """The partial result a profile attached to a provider failure, if any."""
    partial = getattr(error, "partial", None) if isinstance(error, ProviderFailure) else None
    return partial if isinstance(partial, ProviderResult) else None


class AgentProfile(Protocol):
    """A closed profile that edits a worktree (claude: worker and repair)."""

    @property
    def name(self) -> str:
        """The profile's name (``"claude"``)."""
        ...

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
        """Run one worker or repair invocation in ``worktree``; its streams go to
        ``spool`` as they arrive when given (else they are held in memory).

        Raises:
            ProviderFailure: with a P-4 code, after every child process is gone (a
                its :func:`partial_of` is the partial result).
        """
        ...


class ReviewerProfile(Protocol):
    """A closed profile that judges a worktree read-only (codex: reviewer)."""

    @property
    def name(self) -> str:
        """The profile's name (``"codex"``)."""
        ...

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
        """Run one fresh, read-only review; ``scratch`` (outside the worktree) holds the
        output schema and verdict files. The result carries a validated :class:`Verdict`.
        Streams go to ``spool`` as they arrive when given.

        Raises:
            ProviderFailure: ``provider-protocol`` for a missing or schema-violating verdict,
                or another P-4 code, after every child process is gone (a
                its :func:`partial_of` is the partial result).
        """
        ...


RouteName = Literal["subscription", "rehearsal", "api"]


@runtime_checkable
class Preflight(Protocol):
    """A profile that can say, before a run creates or writes anything, whether it could
    start on a route: its executable is found, ``--version`` answers, and — on the
    subscription route — a login is present (issue 22). Both closed profiles implement it;
    a test's in-process fake need not."""

    async def preflight(self, route: RouteName) -> str:
        """The ``--version`` line of the executable that would run.

        Raises:
            ProviderFailure: ``provider-not-found`` (no executable, or it does not answer
                ``--version``), ``provider-auth-required`` (no login, subscription route).
        """
        ...
