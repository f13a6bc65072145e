"""``scripts/setup`` never runs ``npm ci`` through a ``node_modules`` link: npm empties the
link's target, which is the install every other checkout sharing it uses (observed)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the setup inputs with a ready .venv (so only the npm part is exercised)
    and a fake ``npm`` that records its calls."""
    co = tmp_path / "co"
    (co / "scripts").mkdir(parents=True)
    for name in (
        "scripts/setup",
        "pyproject.toml",
        "requirements.lock",
        "package.json",
        "package-lock.json",
    ):
        shutil.copy2(REPO / name, co / name)
    venv_bin = co / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    os.symlink(sys.executable, venv_bin / "python")
    inputs = (co / "pyproject.toml").read_bytes() + (co / "requirements.lock").read_bytes()
    digest = hashlib.sha256(inputs).hexdigest()
    (co / ".venv" / ".factory-setup").write_text(digest + "\n")  # the script's own stamp
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    npm = fakebin / "npm"
    npm.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/npm-calls\nmkdir -p node_modules\n')
    npm.chmod(0o755)
    return co


def setup(co: Path) -> subprocess.CompletedProcess[bytes]:
    path = f"{co.parent / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/tmp"), "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", "scripts/setup"], cwd=co, env=env, capture_output=True, timeout=60, check=False
    )


def shared_install(root: Path, *, complete: bool) -> Path:
    shared = root / "shared"
    (shared / ".bin").mkdir(parents=True)
    (shared / "keep").write_text("other checkouts use this\n")
    if complete:
        for cli in ("claude", "codex"):
            (shared / ".bin" / cli).write_text("#!/bin/sh\n")
            (shared / ".bin" / cli).chmod(0o755)
    return shared


def test_a_linked_shared_install_is_left_alone(checkout: Path, tmp_path: Path) -> None:
    shared = shared_install(tmp_path, complete=True)
    (checkout / "node_modules").symlink_to(shared)
    proc = setup(checkout)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "npm-calls").exists()
    assert (shared / "keep").read_text() == "other checkouts use this\n"
    assert (checkout / "node_modules").is_symlink()


def test_a_linked_install_without_the_clis_is_refused_not_reinstalled(
    checkout: Path, tmp_path: Path
) -> None:
    shared = shared_install(tmp_path, complete=False)
    (checkout / "node_modules").symlink_to(shared)
    proc = setup(checkout)
    assert proc.returncode == 2 and b"link" in proc.stderr
    assert not (tmp_path / "npm-calls").exists() and (shared / "keep").exists()


def test_twin_a_checkout_without_node_modules_runs_npm_ci(checkout: Path, tmp_path: Path) -> None:
    proc = setup(checkout)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "npm-calls").read_text().startswith("ci ")
