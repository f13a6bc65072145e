"""Fixtures for the review tests: a real temporary repository (helpers: cli_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.review.cli_helpers import BASE_FILES
from tests.support.git import init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", dict(BASE_FILES))
