"""Fixtures for the agent-run tests: a real repository with a linked worktree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.layout import Layout, make_layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return make_layout(tmp_path)
