"""Drive the pinned real CLIs against the scripted model (contract-test helper, SPEC P-6).

Everything here goes through the closed profiles in ``providers/``: the binary they
resolve (``node_modules`` of this checkout), the exact argv they build, the child env
they build from empty. The caller environment handed to them is planted with sentinel
values of the variable families a child must never see (SPEC P-3), so a run that still
talks to the scripted model with the route's key shows that none of them won.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import trio

from factory.provider_api import RehearsalRoute
from providers import claude, codex, codex_output
from providers.common import Effects

DEADLINE_S = 25
TIMEOUT_MS = DEADLINE_S * 1000
CALLER_ENVIRON = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    # sentinels: must never reach a child (the route supplies endpoint and key)
    "ANTHROPIC_API_KEY": "sentinel-anthropic-key",
    "ANTHROPIC_BASE_URL": "http://192.0.2.1:9",
    "CODEX_API_KEY": "sentinel-codex-key",
    "OPENAI_API_KEY": "sentinel-openai-key",
    "OPENAI_BASE_URL": "http://192.0.2.1:9",
    "CLAUDECODE": "1",
}
EFFECTS = Effects(environ=CALLER_ENVIRON)


@dataclass(frozen=True)
class Ran:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float

    def events(self) -> list[dict[str, object]]:
        return jsonl(self.stdout)


def jsonl(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def claude_profile() -> claude.ClaudeProfile:
    return claude.ClaudeProfile(EFFECTS)


def codex_profile() -> codex.CodexProfile:
    return codex.CodexProfile(EFFECTS)


def claude_argv_env(route: RehearsalRoute) -> tuple[list[str], dict[str, str]]:
    """The worker argv and env exactly as the claude profile builds them."""
    binary = claude_profile().resolve().path
    return claude.build_argv(binary, "worker"), claude.build_env(route, CALLER_ENVIRON)


def codex_argv_env(
    route: RehearsalRoute, worktree: Path, scratch: Path
) -> tuple[list[str], dict[str, str], Path]:
    """The reviewer argv and env exactly as the codex profile builds them; returns the
    verdict file path too (schema written like the profile writes it)."""
    binary = codex_profile().resolve().path
    scratch.mkdir(parents=True, exist_ok=True)
    schema, verdict = scratch / "verdict-schema.json", scratch / "verdict.json"
    schema.write_text(json.dumps(codex_output.VERDICT_SCHEMA, sort_keys=True))
    argv = codex.build_argv(
        binary, worktree=worktree, schema_file=schema, verdict_file=verdict, route=route
    )
    return argv, codex.build_env(route, CALLER_ENVIRON), verdict


async def run_cli(argv: list[str], env: dict[str, str], cwd: Path, prompt: bytes) -> Ran:
    """Run one CLI with the prompt on stdin (then EOF), under a hard deadline (twins only;
    the contract runs themselves go through the profiles' supervised runner)."""
    started = time.monotonic()
    with trio.fail_after(DEADLINE_S):
        proc = await trio.run_process(
            argv,
            stdin=prompt,
            cwd=cwd,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return Ran(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)
