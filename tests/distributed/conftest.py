"""The distributed engine's fixtures: the real Temporal dev server."""

from tests.support.temporal import temporal_server

__all__ = ["temporal_server"]
