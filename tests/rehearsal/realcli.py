"""Drive the pinned real CLIs against the scripted model (contract-test helper).

The argv here is provider-clis.md §4 verbatim plus the rehearsal route's endpoint wiring;
it is replaced by the closed profiles' own builders once ``providers/`` provides them.
The child env is built from empty: nothing of the caller's environment reaches the CLI.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import trio

from factory.provider_api import RehearsalRoute

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_BIN = ROOT / "node_modules/@anthropic-ai/claude-code-linux-x64/claude"
CODEX_BIN = ROOT / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES"]},
        "summary": {"type": "string"},
    },
    "required": ["verdict", "summary"],
    "additionalProperties": False,
}
DEADLINE_S = 25


@dataclass(frozen=True)
class Ran:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float

    def events(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stdout.decode().splitlines() if line.strip()]


def claude_worker_argv() -> list[str]:
    return [
        str(CLAUDE_BIN), "-p", "--output-format", "stream-json", "--verbose",
        "--permission-mode", "acceptEdits", "--permission-prompts", "none",
        "--allowedTools",
        "Read,Edit,Write,Glob,Grep,Bash(git status:*),Bash(git diff:*),Bash(pytest:*)",
        "--disallowedTools", "WebFetch,WebSearch",
        "--setting-sources", "user", "--strict-mcp-config", "--no-session-persistence",
        "--max-turns", "40", "--max-budget-usd", "5", "--model", "claude-sonnet-4-5",
        "--append-system-prompt", "Work only inside the current directory.",
    ]


def claude_env(route: RehearsalRoute, home: Path) -> dict[str, str]:
    return {
        "PATH": BASE_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CLAUDE_CONFIG_DIR": str(route.config_root / "claude"),
        "ANTHROPIC_BASE_URL": route.base_url,
        "ANTHROPIC_API_KEY": route.api_key,
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def codex_reviewer_argv(
    route: RehearsalRoute, worktree: Path, schema: Path, verdict: Path
) -> list[str]:
    provider = "model_providers.factory_rehearsal"
    return [
        str(CODEX_BIN), "exec", "--sandbox", "read-only", "-c", 'approval_policy="never"',
        "-c", 'model_provider="factory_rehearsal"',
        "-c", f'{provider}.name="factory rehearsal"',
        "-c", f'{provider}.base_url="{route.base_url}/v1"',
        "-c", f'{provider}.env_key="CODEX_API_KEY"',
        "-c", f'{provider}.wire_api="responses"',
        "--json", "--ephemeral", "--color", "never", "--ignore-user-config", "--ignore-rules",
        "-C", str(worktree), "--output-schema", str(schema), "-o", str(verdict),
        "-m", "gpt-5", "-",
    ]


def codex_env(route: RehearsalRoute, home: Path) -> dict[str, str]:
    return {
        "PATH": BASE_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CODEX_HOME": str(route.config_root / "codex"),
        "CODEX_API_KEY": route.api_key,
    }


async def run_cli(argv: list[str], env: dict[str, str], cwd: Path, prompt: bytes) -> Ran:
    """Run one CLI with the prompt on stdin (then EOF), under a hard deadline."""
    started = time.monotonic()
    with trio.fail_after(DEADLINE_S):
        proc = await trio.run_process(
            argv, stdin=prompt, cwd=cwd, env=env,
            capture_stdout=True, capture_stderr=True, check=False,
        )
    return Ran(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)
