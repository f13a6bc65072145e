"""Advice that works as typed where the user stands (issue 9 §1: ``factory receipt show`` and
``claude`` gave "command not found" after set-up, since they live in ``.venv/bin`` and
``node_modules/.bin``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from factory.usercmd import factory_command, shown_path, shown_program


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "co" / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    prog = bin_dir / "factory"
    prog.write_text('#!/bin/sh\necho ran "$@"\n')
    prog.chmod(0o755)
    return prog


def run_as_typed(line: str, cwd: Path, path: str) -> str:
    proc = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env={"PATH": path}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_program_off_path_is_shown_by_a_path_that_runs(
    tool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    co = tmp_path / "co"
    for where, expected in ((co, ".venv/bin/factory"), (co / "sub", "../.venv/bin/factory")):
        where.mkdir(exist_ok=True)
        monkeypatch.chdir(where)
        env = {"PATH": "/usr/bin:/bin"}
        shown = shown_program(tool, env)
        assert shown == expected
        assert run_as_typed(f"{shown} x", where, "/usr/bin:/bin") == "ran x\n"
    far = tmp_path / "a" / "b" / "c"
    far.mkdir(parents=True)
    monkeypatch.chdir(far)
    assert shown_program(tool, {"PATH": "/usr/bin:/bin"}) == str(tool)  # no ../../../ ladder


def test_a_program_found_on_path_is_shown_by_name_and_a_twin_elsewhere_is_not(
    tool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert shown_program(tool, {"PATH": f"{tool.parent}:/usr/bin"}) == "factory"
    other = tmp_path / "other"
    other.mkdir()
    (other / "factory").write_text("#!/bin/sh\n")
    (other / "factory").chmod(0o755)
    # PATH finds a different file of the same name: the bare name would run that one.
    assert shown_program(tool, {"PATH": f"{other}:/usr/bin"}) == "co/.venv/bin/factory"


def test_factory_command_quotes_paths_and_works_as_typed(
    tool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    receipt = tmp_path / "my runs" / "r.json"
    line = factory_command(
        "receipt", "show", receipt, environ={"PATH": "/usr/bin"}, argv0=str(tool)
    )
    assert line == "co/.venv/bin/factory receipt show 'my runs/r.json'"
    assert run_as_typed(line, tmp_path, "/usr/bin:/bin") == "ran receipt show my runs/r.json\n"


def test_under_npm_the_npm_form_is_given_with_paths_from_the_checkout_root(
    tool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    co = tmp_path / "co"
    (co / "package.json").write_text('{"scripts": {"factory:receipt": "x"}}')
    monkeypatch.chdir(co)  # npm runs scripts from the checkout root
    env = {
        "npm_lifecycle_event": "factory:demo",
        "INIT_CWD": str(co / "deep" / "er"),
        "PATH": "/usr/bin",
    }
    line = factory_command(
        "receipt", "show", co / "state" / "r.json", environ=env, argv0=str(tool), checkout=co
    )
    assert line == "npm run factory:receipt -- show state/r.json"
    # No npm script for the command: the program's path, from where the user stands.
    line = factory_command("schema", "x", environ=env, argv0=str(tool), checkout=co)
    assert line == "../../.venv/bin/factory schema x"
    assert shown_path(co / "state" / "r.json", env) == "state/r.json"


def test_python_dash_m_is_given_when_factory_was_started_as_a_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    line = factory_command("doctor", environ={"PATH": os.defpath}, argv0="/x/factory/__main__.py")
    assert line.endswith(" -m factory doctor")
