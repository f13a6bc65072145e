"""``agent --help`` and ``batch run --help`` say factory.toml may fill their flags, and the
defaults they show stay the built-in ones whatever a file says (issue 28)."""

from __future__ import annotations

import os

import pytest

from tests.support.cli import run_factory
from tests.support.config_places import Places


@pytest.mark.parametrize("words", [["agent"], ["batch", "run"]])
def test_help_names_the_config_and_keeps_built_in_defaults(
    places: Places, words: list[str]
) -> None:
    places.user("[batch]\njobs = 7\n[timeouts]\nprovider_ms = 4321\n")
    env = {**os.environ, "HOME": str(places.xdg.parent), "XDG_CONFIG_HOME": str(places.xdg)}
    proc = run_factory([*words, "--help"], cwd=places.repo, env=env, timeout=60)
    text = " ".join(proc.stdout.decode().split())  # argparse wraps the epilog
    assert proc.returncode == 0
    assert "factory.toml (yours, or the repository's) may fill these flags" in text
    assert f"'factory config show -- {' '.join(words)}'" in text
    assert "4321" not in text and "7)" not in text  # the file's values are not shown
    built_in = "(default 2)" if words == ["batch", "run"] else "(default 600000)"
    assert built_in in text


def test_a_command_without_keys_does_not_claim_one() -> None:
    proc = run_factory(["batch", "verify", "--help"])
    assert proc.returncode == 0 and b"may fill these flags" not in proc.stdout
