"""A git repository and a private user config folder, for the factory.toml tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.config_places import Places, make_places


@pytest.fixture
def places(tmp_path: Path) -> Places:
    return make_places(tmp_path)
