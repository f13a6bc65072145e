"""Shared fixtures: the loopback forge emulation (fails the test on any unexpected request
or any merge attempt) and a git ``http-backend`` remote. A conftest imports them by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.operator.helpers import REPO
from tests.support.forge import LoopbackForge, serve_forge
from tests.support.git_remote import HttpRemote, serve_http


@pytest.fixture
def forge() -> Iterator[LoopbackForge]:
    with serve_forge() as running:
        running.state.repo(REPO)
        yield running
        assert running.state.merge_attempts == [], "a merge endpoint was called"
        assert running.state.unexpected == [], "the forge got a request outside the emulation"


@pytest.fixture
def http_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    root = tmp_path / "remotes"
    root.mkdir()
    with serve_http(root) as running:
        yield running
