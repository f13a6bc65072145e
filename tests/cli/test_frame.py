"""The CLI frame: strict flags, help, stdout discipline, exit codes, crash logs (F-2, F-3)."""

from __future__ import annotations

import argparse
import json
import platform
import re
from pathlib import Path

import pytest

from factory.cli import framework
from factory.cli.main import build_parser, main
from tests.support.cli import run_factory

ROOT = Path(__file__).resolve().parents[2]


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands registered")


COMMANDS = sorted(_subcommands())


def test_top_level_help_and_version() -> None:
    proc = run_factory(["--help"])
    assert proc.returncode == 0
    for name in COMMANDS:
        assert name.encode() in proc.stdout
    version = run_factory(["--version"])
    assert version.returncode == 0
    assert version.stdout.startswith(b"factory ")
    # The pinned provider CLIs (as shipped) and the Python in use are named too.
    text = version.stdout.decode()
    pins = json.loads((ROOT / "providers" / "pins.json").read_text(encoding="utf-8"))
    for name, pin in pins.items():
        assert f"pinned {name}: {pin['package']}@{pin['version']}\n" in text
    assert f"python: CPython {platform.python_version()}\n" in text
    assert version.stderr == b""


def test_no_command_is_usage_error_with_empty_stdout() -> None:
    proc = run_factory([])
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"digest" in proc.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_help_answers(command: str) -> None:
    proc = run_factory([command, "--help"])
    assert proc.returncode == 0
    assert f"factory {command}".encode() in proc.stdout
    assert len(proc.stdout.decode().split()) > 5


def test_unknown_top_level_flag_refused() -> None:
    proc = run_factory(["--frobnicate"])
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.startswith(b"factory: usage:")


def test_unknown_command_refused() -> None:
    proc = run_factory(["frobnicate"])
    assert proc.returncode == 2
    assert proc.stdout == b""


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_flag_refused_for_each_command(command: str, tmp_path: Path) -> None:
    proc = run_factory([command, "--no-such-flag"], cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.startswith(b"factory: ")
    assert b"Traceback" not in proc.stderr


def _option_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]


REPEATABLE = (
    argparse._AppendAction,
    argparse._AppendConstAction,
    argparse._CountAction,
    argparse._ExtendAction,
    argparse._VersionAction,
)


def _valid_value(action: argparse.Action) -> str:
    """A value the option accepts, so only the repetition can be what is refused."""
    if action.choices:
        return str(next(iter(action.choices)))
    for candidate in ("value", "1", "0"):
        if action.type is None:
            return candidate
        try:
            if callable(action.type) and action.type(candidate) is not None:
                return candidate
        except (TypeError, ValueError, argparse.ArgumentTypeError):
            continue
    return "value"


@pytest.mark.parametrize("command", COMMANDS)
def test_duplicated_flag_refused_for_each_command(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sub = _subcommands()[command]
    options = [a for a in _option_actions(sub) if not isinstance(a, REPEATABLE)]
    if not options:
        # A command without flags (a placeholder) takes nothing; a repeated flag is still
        # refused with exit 2.
        assert main([command, "--x", "--x"]) == 2
        assert capsys.readouterr().out == ""
        return
    for action in options:
        flag = action.option_strings[-1]
        args = [flag] if action.nargs == 0 else [flag, _valid_value(action)]
        assert main([command, *args, *args]) == 2, flag
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "duplicate-flag" in captured.err, (flag, captured.err)


def test_every_single_value_option_is_guarded_against_repetition() -> None:
    from factory.cli.framework import _Once, _OnceConst

    for name, sub in _subcommands().items():
        for action in _option_actions(sub):
            assert isinstance(action, (_Once, _OnceConst, *REPEATABLE)), (name, action)


def test_store_false_and_const_are_refused_twice_too() -> None:
    from factory.cli.framework import StrictParser
    from factory.errors import UsageError

    parser = StrictParser(prog="t")
    parser.add_argument("--no-color", action="store_false", dest="color")
    parser.add_argument("--fast", action="store_const", const="fast", dest="mode")
    parser.add_argument("--tag", action="append")
    ns = parser.parse_args([])
    assert (ns.color, ns.mode) == (True, None)
    ns = parser.parse_args(["--no-color", "--fast", "--tag", "a", "--tag", "b"])
    assert (ns.color, ns.mode, ns.tag) == (False, "fast", ["a", "b"])
    for twice in (["--no-color", "--no-color"], ["--fast", "--fast"]):
        with pytest.raises(UsageError) as info:
            parser.parse_args(twice)
        assert info.value.code == "duplicate-flag"


def test_duplicated_flag_refused_as_subprocess(tmp_path: Path) -> None:
    for argv in (
        ["digest", "--root", str(tmp_path), "--root", str(tmp_path)],
        ["digest", "--root", str(tmp_path), "--json", "--json"],
        ["digest", "--root=" + str(tmp_path), "--root", str(tmp_path)],
    ):
        proc = run_factory(argv)
        assert proc.returncode == 2, argv
        assert proc.stdout == b""
        assert b"factory: duplicate-flag:" in proc.stderr
    twin = run_factory(["digest", "--root", str(tmp_path), "--json"])
    assert twin.returncode == 0


def test_abbreviated_flags_refused_and_twin(tmp_path: Path) -> None:
    for argv in (["digest", "--ro", str(tmp_path)], ["digest", "--root", str(tmp_path), "--js"]):
        proc = run_factory(argv)
        assert proc.returncode == 2, argv
        assert proc.stdout == b""
    assert run_factory(["digest", "--root", str(tmp_path), "--json"]).returncode == 0


def test_internal_error_writes_traceback_log_and_prints_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("FACTORY_STATE_DIR", str(state))

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("simulated bug in the digest core")

    monkeypatch.setattr("factory.inventory.service.digest_tree", broken)
    code = main(["digest", "--root", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert "Traceback" not in captured.err
    match = re.fullmatch(
        r"factory: internal error \(RuntimeError\); traceback in (\S+)\n", captured.err
    )
    assert match, captured.err
    log = Path(match.group(1))
    assert log.parent == state / "logs"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "simulated bug in the digest core" in text
    assert log.stat().st_mode & 0o777 == 0o600


def test_a_typed_internal_error_goes_through_the_crash_log_with_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # observed: a bare FactoryError (internal family) exited 1 with no crash log at all
    from factory import __version__
    from factory.errors import FactoryError

    state = tmp_path / "state"
    monkeypatch.setenv("FACTORY_STATE_DIR", str(state))

    def broken(*args: object, **kwargs: object) -> object:
        raise FactoryError("value is not canonicalisable JSON")

    monkeypatch.setattr("factory.inventory.service.digest_tree", broken)
    assert main(["digest", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    match = re.fullmatch(r"factory: internal error \(internal\); traceback in (\S+)\n", err)
    assert match, err
    text = Path(match.group(1)).read_text()
    assert f"factory: {__version__}\n" in text and "not canonicalisable" in text


def test_typed_error_writes_no_log_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("FACTORY_STATE_DIR", str(state))
    code = main(["digest", "--root", str(tmp_path / "missing")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith("factory: root-not-folder: ")
    assert not (state / "logs").exists()


def test_keyboard_interrupt_is_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr("factory.inventory.service.digest_tree", interrupted)
    assert main(["digest", "--root", str(tmp_path)]) == 130
    assert capsys.readouterr().out == ""


def test_crash_log_falls_back_when_state_unwritable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    monkeypatch.setenv("FACTORY_STATE_DIR", str(blocker))

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("bug")

    monkeypatch.setattr("factory.inventory.service.digest_tree", broken)
    assert main(["digest", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == "factory: internal error (RuntimeError); the traceback could not be written\n"
    assert framework.default_state_dir() == blocker


def _into_closed_pipe(args: list[str]) -> tuple[int, bytes]:
    """``factory ARGS | head -0``: the reader is gone before the first byte is written."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "factory", *args], stdin=subprocess.DEVNULL,
            stdout=write_end, stderr=subprocess.PIPE, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(("args", "code"), [(["schema", "agent-receipt"], 0), (["schema"], 0)])
def test_a_reader_that_goes_away_keeps_the_commands_exit_code(args: list[str], code: int) -> None:
    """A closed pipe used to end every command as an internal error (exit 1), in silence."""
    got, err = _into_closed_pipe(args)
    assert got == code, err
    assert b"Traceback" not in err


def test_a_closed_pipe_does_not_turn_a_refusal_into_success() -> None:
    got, err = _into_closed_pipe(["schema", "no-such-document"])
    assert got == 2 and b"unknown-schema" in err
