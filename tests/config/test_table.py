"""The one table from factory.toml keys to argparse dests is true to the parser."""

from __future__ import annotations

import argparse

import pytest

from factory.cli.config_apply import leaf
from factory.cli.main import build_parser
from factory.config.load import _SECRET_NAME
from factory.config.table import TABLE, Binding

PARSER = build_parser()


def _flags(parser: argparse.ArgumentParser, dest: str) -> list[str]:
    return [s for a in parser._actions if a.dest == dest for s in a.option_strings]


@pytest.mark.parametrize("binding", TABLE, ids=lambda b: b.key)
def test_each_key_feeds_a_dest_every_listed_command_has(binding: Binding) -> None:
    for command in binding.commands:
        command_parser = leaf(PARSER, command)
        if binding.kind == "argv":  # the test command after '--', set by batch's parser
            assert command_parser.get_default(binding.dest) is None
            continue
        assert binding.flag in _flags(command_parser, binding.dest), command


def test_a_command_dest_is_fed_by_one_key_at_most() -> None:
    pairs = [(c, b.dest) for b in TABLE for c in b.commands]
    assert len(pairs) == len(set(pairs))


def test_no_key_of_the_table_looks_like_a_secret() -> None:
    assert not [b.key for b in TABLE if _SECRET_NAME.search(b.name)]
    # Negative control: the rule does see a secret-shaped name.
    assert _SECRET_NAME.search("operator_private_key") and _SECRET_NAME.search("api_key")


def test_a_repository_may_set_no_authority_and_no_program() -> None:
    """Keys, ledger, forge, remotes and the test command are the user's alone."""
    authority = {"private_key", "public_key", "ledger", "repository", "forge_url", "remote"}
    for binding in TABLE:
        if binding.dest in authority or binding.kind in ("path", "argv"):
            assert not binding.repository, binding.key
    assert {b.section for b in TABLE if b.repository} == {"models", "timeouts"}


def test_the_repository_ceilings_are_the_built_in_defaults() -> None:
    from factory.choices import BUDGET_USD, WORKER_TURNS
    from factory.config.table import BY_KEY

    assert BY_KEY["models.max_turns"].ceiling == WORKER_TURNS
    assert BY_KEY["models.max_budget_usd"].ceiling == BUDGET_USD


def test_the_configured_commands_are_the_tables() -> None:
    from factory.config.commands import CONFIGURED

    assert {c for b in TABLE for c in b.commands} == CONFIGURED
