"""Fixtures: the loopback forge emulation (fails the test on any unexpected request or any
merge attempt) and a git ``http-backend`` remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.operator.helpers import World, make_world
from tests.support.fixtures import forge, http_remote
from tests.support.forge import LoopbackForge
from tests.support.git_remote import HttpRemote

__all__ = ["file_world", "forge", "http_remote", "world"]


@pytest.fixture
def world(tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote) -> World:
    """A completed agent receipt, a bare remote over git http-backend, the forge."""
    return make_world(tmp_path, forge, http_remote)


@pytest.fixture
def file_world(tmp_path: Path, forge: LoopbackForge) -> World:
    """The same, with the remote reached over file://."""
    return make_world(tmp_path, forge, None)
