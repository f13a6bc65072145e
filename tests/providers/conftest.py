"""Fixtures for profile tests: fake CLIs first on PATH, a real git worktree, routes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from factory.provider_api import RehearsalRoute
from providers import Effects
from tests.providers.helpers import GRACE_S
from tests.support.fake_cli import Fakes, install_fakes
from tests.support.git import init_repo


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fakes]:
    handle = install_fakes(tmp_path / "fakebin")
    monkeypatch.setenv("PATH", f"{handle.bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    yield handle
    assert handle.survivors() == [], "a fake CLI process outlived its run"


@pytest.fixture
def effects() -> Effects:
    """Real runner and environment; short grace; no checkout fallback (fakes only)."""
    return Effects(fallback_dirs=(), grace_s=GRACE_S)


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


@pytest.fixture
def rehearsal(tmp_path: Path) -> RehearsalRoute:
    return RehearsalRoute(
        base_url="http://127.0.0.1:9", api_key="rehearsal-key-1", config_root=tmp_path / "route"
    )


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder
