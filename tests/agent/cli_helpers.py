"""Run ``factory agent`` as a subprocess with scripted fake profiles
(``tests/agent/fake_factory.py``), and look at what it wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.layout import Layout

FAKE = Path(__file__).with_name("fake_factory.py")


def agent_args(layout: Layout, *extra: str) -> list[str]:
    return [
        "agent",
        "--worktree",
        str(layout.wt),
        "--task",
        "fix add()",
        "--out",
        str(layout.receipt),
        "--timeout-ms",
        "5000",
        *extra,
    ]


def fake(scenario: str, args: list[str], *marker: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(FAKE), scenario, *marker, "--", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )


def evidence_files(layout: Layout) -> list[Path]:
    return sorted(p for p in layout.evidence.iterdir())
