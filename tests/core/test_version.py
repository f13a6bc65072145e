"""One version number (issue 10 §7): ``factory.__version__``, and everything reads it."""

from __future__ import annotations

import json
import tomllib
from importlib import metadata
from pathlib import Path

from factory import __version__
from tests.support.cli import run_factory

REPO = Path(__file__).resolve().parents[2]


def test_the_distribution_takes_its_version_from_the_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "factory.__version__"
    assert metadata.version("factory-receipts") == __version__  # as installed by setup


def test_the_npm_manifest_declares_no_second_version() -> None:
    assert "version" not in json.loads((REPO / "package.json").read_text())
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert "version" not in lock and "version" not in lock["packages"][""]


def test_the_cli_reports_it() -> None:
    """The first line is the version (scripts read it); the pinned CLIs and the Python
    follow (tests/cli/test_frame.py checks those)."""
    proc = run_factory(["--version"])
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == f"factory {__version__}".encode()
