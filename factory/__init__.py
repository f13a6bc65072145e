"""factory: verifiable work for coding agents (see README.md and design/ARCHITECTURE.md)."""

__version__ = "0.1.0"
