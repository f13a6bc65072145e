"""Run the real ``factory`` CLI as a subprocess, the way users do."""

from __future__ import annotations

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
