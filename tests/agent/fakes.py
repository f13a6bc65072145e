"""In-process fake profiles implementing the provider protocols, scriptable per call."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from factory.errors import ProviderFailure, lookup
from factory.provider_api import ProviderResult, Role, Route, Spool, Verdict

Effect = Callable[[Path], None]


def _scripted_failure(name: str) -> ProviderFailure:
    code = lookup(name)
    assert code is not None and code.error is ProviderFailure, name
    failure: ProviderFailure = code("scripted failure")
    return failure


@dataclass
class Step:
    """One scripted invocation: an effect on the worktree, then a result or a failure."""

    effect: Effect | None = None
    verdict: str | None = "APPROVE"  # reviewer only; None → no verdict (prose)
    fail_code: str | None = None  # raise ProviderFailure with this code
    raise_exc: BaseException | None = None
    hang: bool = False
    stdout: bytes = b'{"type":"result","is_error":false}\n'


@dataclass
class Call:
    role: str
    prompt: str
    worktree: Path
    scratch: Path | None = None


@dataclass
class FakeAgent:
    steps: list[Step]
    name: str = "claude"
    calls: list[Call] = field(default_factory=list)

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
        self.calls.append(Call(role, prompt, worktree))
        step = self.steps[len(self.calls) - 1]  # IndexError: more calls than scripted
        await trio.lowlevel.checkpoint()
        if step.effect is not None:
            step.effect(worktree)
        if step.hang:
            await trio.sleep_forever()
        if step.raise_exc is not None:
            raise step.raise_exc
        if step.fail_code is not None:
            raise _scripted_failure(step.fail_code)
        return ProviderResult(
            profile=self.name,
            role=role,
            cli_version="fake-claude 1.0",
            argv_shape=("claude", "-p", "<prompt>"),
            exit_code=0,
            duration_ms=1,
            outputs={"stdout": step.stdout + role.encode(), "stderr": b""},
            requested_authority="accept-edits-in-worktree",
        )


@dataclass
class FakeReviewer:
    steps: list[Step]
    name: str = "codex"
    calls: list[Call] = field(default_factory=list)

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
        self.calls.append(Call("reviewer", prompt, worktree, scratch))
        step = self.steps[len(self.calls) - 1]
        await trio.lowlevel.checkpoint()
        if step.effect is not None:
            step.effect(worktree)
        if step.hang:
            await trio.sleep_forever()
        if step.raise_exc is not None:
            raise step.raise_exc
        if step.fail_code is not None:
            raise _scripted_failure(step.fail_code)
        outputs = {"stdout": step.stdout, "stderr": b""}
        verdict = None
        if step.verdict is not None:
            summary = f"review {len(self.calls)}: {step.verdict}"
            outputs["verdict"] = json.dumps({"verdict": step.verdict, "summary": summary}).encode()
            verdict = Verdict(verdict=step.verdict, summary=summary)  # type: ignore[arg-type]
        return ProviderResult(
            profile=self.name,
            role="reviewer",
            cli_version="fake-codex 1.0",
            argv_shape=("codex", "exec", "--sandbox", "read-only", "-"),
            exit_code=0,
            duration_ms=1,
            outputs=outputs,
            verdict=verdict,
            requested_authority="read-only-sandbox",
        )


def write(rel: str, text: str = "changed\n") -> Effect:
    def effect(wt: Path) -> None:
        p = wt / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    return effect


def chain(*effects: Effect) -> Effect:
    def effect(wt: Path) -> None:
        for e in effects:
            e(wt)

    return effect
