"""Placeholder until the foundation suite lands: the CLI answers --help."""

from tests.support.cli import run_factory


def test_help_answers() -> None:
    proc = run_factory(["--help"])
    assert proc.returncode == 0
    assert b"digest" in proc.stdout
