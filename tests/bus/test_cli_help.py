"""``--help`` and bare command groups answer with their own help (SPEC F-2)."""

from __future__ import annotations

import pytest

from factory.bus.model import VERBS
from factory.cli.main import main
from factory.errors import ExitCode


def test_a_bare_command_group_prints_its_own_help_not_the_top_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bus"]) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: factory bus ")
    assert "serve" in err and "verify" in err


def test_negative_control_no_command_prints_the_top_level_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: factory [-h]")


@pytest.mark.parametrize("sub", ["serve", "verify", *VERBS])
def test_every_bus_subcommand_answers_help(sub: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bus", sub, "--help"])
    assert exc.value.code == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"usage: factory bus {sub} ") and err == ""
    assert "--data-dir" in out
    assert "ARG_" not in out  # flags show the MCP argument name, not an internal dest
