"""The batch tests' fixtures: the loopback forge emulation (for --from-forge)."""

from tests.support.fixtures import forge

__all__ = ["forge"]
