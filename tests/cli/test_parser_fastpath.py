"""``factory X …`` imports only the command module ``X_cmd`` when it registers ``X``
(factory/cli/main.py): the parser it builds must answer exactly as the full one does."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

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
    full = _choices(build_parser())  # built now too: a help may name this run's state folder
    assert list(fast) == [name]
    assert fast[name].format_help() == full[name].format_help()


@pytest.mark.parametrize("argv", [[], ["--help"], ["keygen"], ["frobnicate"], ["--version"]])
def test_anything_else_gets_the_full_parser(argv: list[str]) -> None:
    assert list(_choices(_parser_for(argv))) == list(FULL)


def _plugin_setting(env: dict[str, str]) -> str:
    probe = (
        "import os, sys\n"
        "from factory.cli.main import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(os.environ.get('PYDANTIC_DISABLE_PLUGINS', '<unset>'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, check=True, timeout=60
    )
    return proc.stderr.decode()


def test_no_pydantic_plugin_judges_a_document_unless_the_caller_asks() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    assert _plugin_setting(env) == "__all__"
    assert _plugin_setting({**env, "PYDANTIC_DISABLE_PLUGINS": "some_plugin"}) == "some_plugin"
