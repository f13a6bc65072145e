"""Run the real ``factory`` CLI as a subprocess, the way users do."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def run_factory(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    input: bytes | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    user: int | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m factory ARGS`` with stdout/stderr captured as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "factory", *args],
        cwd=cwd,
        input=input if input is not None else b"",
        capture_output=True,
        timeout=timeout,
        check=False,
        env=env,
        user=user,
    )


def own_output(proc: subprocess.CompletedProcess[bytes]) -> bytes:
    """stdout without npm's error object, which must be there exactly when the exit is not 0."""
    if proc.returncode == 0:
        return proc.stdout
    head, sep, tail = proc.stdout.rpartition(b'{\n  "error": {')
    assert sep, proc.stdout[-500:]
    assert json.loads(sep + tail)["error"]["code"] == proc.returncode
    return head
