"""``factory X …`` imports only the command module ``X_cmd`` when it registers ``X``
(factory/cli/main.py): the parser it builds must answer exactly as the full one does."""

from __future__ import annotations

import argparse

import pytest

from factory.cli.main import COMMAND_MODULES, _parser_for, build_parser


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands registered")


FULL = _choices(build_parser())
FAST = sorted(n for n in FULL if f"{n}_cmd" in COMMAND_MODULES)


def test_most_commands_take_the_fast_path() -> None:
    assert "review" in FAST and len(FAST) >= len(COMMAND_MODULES) - 2


@pytest.mark.parametrize("name", FAST)
def test_the_fast_parser_is_the_full_parser_for_its_command(name: str) -> None:
    fast = _choices(_parser_for([name, "--help"]))
    assert list(fast) == [name]
    assert fast[name].format_help() == FULL[name].format_help()


@pytest.mark.parametrize("argv", [[], ["--help"], ["keygen"], ["frobnicate"], ["--version"]])
def test_anything_else_gets_the_full_parser(argv: list[str]) -> None:
    assert list(_choices(_parser_for(argv))) == list(FULL)
