"""Rehearsal scenarios for the end-to-end agent tests (the scripted model's invocations)."""

from __future__ import annotations

import json
from pathlib import Path

GREET = "def greet(name: str) -> str:\n    return f'Hello, {name}!'\n"
TEST = (
    "from greeting import greet\n\n\n"
    "def test_greet() -> None:\n    assert greet('A') == 'Hello, A!'\n"
)


def worker(path: str, content: str, role: str = "worker") -> dict[str, object]:
    return {
        "role": role,
        "tool_calls": [{"tool": "Write", "file_path": path, "content": content}],
        "final_message": f"Wrote {path}.",
    }


def reviewer(verdict: str, *commands: str) -> dict[str, object]:
    return {
        "role": "reviewer",
        "tool_calls": [{"tool": "shell", "command": c} for c in commands or ("cat greeting.py",)],
        "final_message": json.dumps({"verdict": verdict, "summary": f"scripted {verdict}"}),
    }


def scenario(tmp_path: Path, *invocations: dict[str, object]) -> Path:
    path = tmp_path / "scenario.json"
    body = {"schema": "factory.rehearsal-scenario/1", "invocations": list(invocations)}
    path.write_text(json.dumps(body))
    return path
