"""Fixtures: the loopback forge emulation and a git ``http-backend`` remote (the operator
tests' own, which fail a test on any unexpected forge request or merge attempt)."""

from __future__ import annotations

from tests.support.fixtures import forge, http_remote

__all__ = ["forge", "http_remote"]
