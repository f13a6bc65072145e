"""``factory demo --help`` names the folder the demo really writes to on this installation
(issue 28: an installed factory has no checkout ``state/``), never a placeholder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _help(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "factory", "demo", "--help"],
        capture_output=True, timeout=60, check=True, env=env,
    )  # fmt: skip
    return " ".join(proc.stdout.decode().split())


def test_the_help_names_the_state_folder_in_use(tmp_path: Path) -> None:
    env = {**os.environ, "FACTORY_STATE_DIR": str(tmp_path / "st")}
    assert f"(default: {tmp_path / 'st'}/demo-<UTC time>)" in _help(env)
    other = {**os.environ, "FACTORY_STATE_DIR": str(tmp_path / "elsewhere")}  # twin
    text = _help(other)
    assert f"(default: {tmp_path / 'elsewhere'}/demo-<UTC time>)" in text
    assert "state/demo-<UTC time>" not in text.replace(str(tmp_path), "")
