"""``scripts/inventory-digest`` and ``npm run factory:digest`` run the same CLI (F-1, F-6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_factory
from tests.support.inventory_ref import reference_digest, write


def test_script_matches_factory_digest(repo_root: Path, tmp_path: Path) -> None:
    write(tmp_path, "a/b.txt", "b\r\n")
    write(tmp_path, "c", "")
    script = subprocess.run(
        [str(repo_root / "scripts" / "inventory-digest"), "--root", str(tmp_path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    direct = run_factory(["digest", "--root", str(tmp_path)])
    assert script.returncode == direct.returncode == 0
    assert script.stdout == direct.stdout
    assert script.stdout.decode().endswith(f" {reference_digest(tmp_path)}\n")


def test_script_refusals_pass_through(repo_root: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path)
    proc = subprocess.run(
        [str(repo_root / "scripts" / "inventory-digest"), "--root", str(tmp_path), "--bogus"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    twin = subprocess.run(
        [str(repo_root / "scripts" / "inventory-digest"), "--root", str(tmp_path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert twin.returncode == 2
    assert twin.stderr.startswith(b"factory: symlink-refused: link: ")


def test_script_defaults_to_its_checkout_and_runs_before_setup(
    repo_root: Path, tmp_path: Path
) -> None:
    # A fresh "checkout" holding only the script: no .venv, so it falls back to
    # python3 with the checkout on PYTHONPATH (here pointed at this repo's sources).
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy2(repo_root / "scripts" / "inventory-digest", checkout / "scripts")
    write(checkout, "README.md", "hello\n")
    env = {
        "PATH": os.environ["PATH"],
        "PYTHON": sys.executable,
        "PYTHONPATH": str(repo_root),
        "HOME": os.environ["HOME"],
    }
    proc = subprocess.run(
        [str(checkout / "scripts" / "inventory-digest"), "--json"],
        capture_output=True,
        timeout=60,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert f'"root": "{checkout}"'.encode() in proc.stdout
    assert f'"digest": "{reference_digest(checkout)}"'.encode() in proc.stdout


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH")
def test_npm_script_runs_the_digest(repo_root: Path, tmp_path: Path) -> None:
    if not (repo_root / ".venv" / "bin" / "factory").exists():
        pytest.skip("scripts/setup has not created .venv in this checkout")
    write(tmp_path, "x.txt", "x")
    proc = subprocess.run(
        ["npm", "run", "--silent", "factory:digest", "--", "--root", str(tmp_path)],
        cwd=repo_root,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().endswith(f" {reference_digest(tmp_path)}\n")
