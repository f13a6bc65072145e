"""factory: verifiable work for coding agents (see README.md and design/ARCHITECTURE.md)."""

# The one version number: the distribution (pyproject.toml, dynamic), --version, receipts,
# crash logs and the bus server all read this.
__version__ = "0.1.0"
