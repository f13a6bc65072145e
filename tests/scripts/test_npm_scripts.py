"""``npm run factory:*`` as a newcomer types it (issue 9 §1): npm's banner stays off stdout,
a mistyped script fails loudly, and a checkout that was never set up says what to do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH")


def npm(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["npm", "run", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_mistyped_script_fails_loudly() -> None:
    proc = npm(REPO, "factory:demoo")
    assert proc.returncode != 0
    assert 'Missing script: "factory:demoo"' in proc.stderr
    assert "npm run factory:demo" in proc.stderr  # npm's own "did you mean"


def test_npm_run_lists_the_scripts() -> None:
    proc = npm(REPO)
    assert proc.returncode == 0
    for name in ("factory:demo", "factory:agent", "factory:receipt", "factory:doctor"):
        assert name in proc.stdout


def test_the_banner_goes_to_stderr_and_stdout_is_the_command_output(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    proc = npm(REPO, "factory:digest", "--", "--root", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("format=inventory-digest/1\n")
    assert "> factory:digest" in proc.stderr  # npm still says what it runs, on stderr


def test_without_setup_the_scripts_say_run_setup_first(tmp_path: Path) -> None:
    co = tmp_path / "checkout"
    (co / "scripts").mkdir(parents=True)
    for name in ("package.json", ".npmrc", "scripts/npm-factory"):
        shutil.copy2(REPO / name, co / name)
    for script in ("factory:demo", "factory:receipt"):
        proc = npm(co, script)
        assert proc.returncode == 2, proc.stderr
        assert "factory: not set up in this checkout: run ./scripts/setup first" in proc.stderr
        assert "not found" not in proc.stderr
