"""``factory config`` and factory.toml through the real CLI, in subprocesses with a private
HOME and XDG_CONFIG_HOME."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from factory.config.table import TABLE
from tests.support.cli import run_factory
from tests.support.config_places import Places
from tests.support.schemas import assert_valid


def _env(places: Places) -> dict[str, str]:
    home = places.xdg.parent / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(places.xdg)}


def _run(places: Places, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_factory(list(args), cwd=cwd or places.repo, env=_env(places), timeout=60)


def _clean_refusal(proc: subprocess.CompletedProcess[bytes], code: str) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert f"factory: {code}: " in err and "Traceback" not in err
    assert proc.stdout == b""
    return err


def test_help_answers() -> None:
    for args in (["config", "--help"], ["config", "show", "--help"], ["config", "path", "--help"]):
        proc = run_factory(args)
        assert proc.returncode == 0 and b"factory.toml" in proc.stdout + proc.stderr
    top = run_factory(["--help"])
    assert b"config" in top.stdout


def test_show_json_names_every_key_and_its_source(places: Places) -> None:
    user = places.user('[models]\nmodel = "m-user"\nmax_turns = 30\n[batch]\njobs = 4\n')
    repo = places.repository('[models]\nmodel = "m-repo"\n')
    proc = _run(places, "config", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert_valid("config-show", doc)
    values = {v["key"]: v for v in doc["values"]}
    assert [v["key"] for v in doc["values"]] == [b.key for b in TABLE]
    assert (values["models.model"]["value"], values["models.model"]["source"]) == (
        "m-repo", "repository"
    )  # fmt: skip
    assert values["models.model"]["file"] == str(repo)
    assert (values["models.max_turns"]["value"], values["models.max_turns"]["file"]) == (
        30, str(user)
    )  # fmt: skip
    assert (values["batch.jobs"]["value"], values["batch.jobs"]["source"]) == (4, "user")
    defaulted = values["timeouts.provider_ms"]
    assert (defaulted["value"], defaulted["source"], defaulted["file"]) == (600000, "default", None)
    assert doc["files"] == [
        {"role": "repository", "path": str(repo), "present": True},
        {"role": "user", "path": str(user), "present": True},
    ]


def test_show_text_and_the_repo_flag(places: Places, tmp_path: Path) -> None:
    places.user("[worker]\njobs = 3\n")
    places.repository("[timeouts]\nprovider_ms = 9000\n")
    proc = _run(places, "config", "show", "--repo", str(places.repo), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "timeouts.provider_ms" in text and "= 9000" in text
    assert f"from repository file {places.repo_file}" in text
    assert f"from user file {places.user_file}" in text and "= 3" in text
    assert "(not set: built-in 40)" in text
    # Outside a repository, only the user's file.
    outside = _run(places, "config", "show", cwd=tmp_path)
    assert b"9000" not in outside.stdout and b"not inside a git checkout" in outside.stdout
    bad = _run(places, "config", "show", "--repo", str(tmp_path), cwd=tmp_path)
    _clean_refusal(bad, "config-repo-not-a-checkout")


def test_path_lists_the_files_searched(places: Places) -> None:
    places.user("")
    proc = _run(places, "config", "path")
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines() == [
        f"repository\t{places.repo_file}\tabsent",
        f"user\t{places.user_file}\tpresent",
    ]


def test_a_broken_file_is_a_clean_refusal_naming_file_and_key(places: Places) -> None:
    places.user('[models]\nmodle = "x"\n')
    err = _clean_refusal(_run(places, "config", "show"), "config-unknown-key")
    assert str(places.user_file) in err and "models.modle" in err
    places.user("[models]\nmax_turns = 1.5\n")
    _clean_refusal(_run(places, "config", "show"), "config-wrong-type")
    places.user("[models\n")
    _clean_refusal(_run(places, "config", "show"), "config-invalid-toml")
    places.user_file.write_bytes(b"[models]\nmodel = '\xfe'\n")
    _clean_refusal(_run(places, "config", "show"), "config-not-utf8")
    places.user_file.unlink()
    os.mkfifo(places.user_file)  # read without a writer would block: it must not
    _clean_refusal(_run(places, "config", "show"), "config-not-regular")


def test_a_secret_is_refused_and_not_printed(places: Places) -> None:
    secret = "ghp_0123456789abcdefSECRET"
    places.user(f'[operator]\ntoken = "{secret}"\n')
    proc = _run(places, "config", "show", "--json")
    err = _clean_refusal(proc, "config-secret-refused")
    assert "operator.token" in err and secret.encode() not in proc.stdout + proc.stderr
    places.user(f'[models]\nmodel = "{secret}"\n')
    proc = _run(places, "agent", "--task", "t", "--out", "o", "--worktree", "w")
    _clean_refusal(proc, "config-secret-refused")
    assert secret.encode() not in proc.stdout + proc.stderr


def test_a_hostile_repository_file_is_shown_inert(places: Places) -> None:
    places.repo_file.write_bytes(b'[models]\n"\\u001b[31mred" = 1\n')
    proc = _run(places, "config", "show")
    err = _clean_refusal(proc, "config-unknown-key")
    assert "\x1b" not in err and "\\x1b[31mred" in err


def test_a_real_command_takes_the_file_and_the_flag_wins(places: Places) -> None:
    """``factory agent``: a bad cap in the user file stops it before anything runs; with the
    flag given, the file's value is not used and the command goes on to its own checks."""
    places.user("[models]\nmax_turns = 9999\n")
    argv = ["agent", "--task", "t", "--out", "o.json", "--worktree", "missing-worktree"]
    err = _clean_refusal(_run(places, *argv), "config-value-invalid")
    assert "models.max_turns" in err and str(places.user_file) in err
    flagged = _run(places, *argv, "--max-turns", "5")
    assert flagged.returncode == 2 and b"config-value-invalid" not in flagged.stderr
    assert b"factory: worktree-missing:" in flagged.stderr


def test_required_operator_flags_from_the_user_file(places: Places) -> None:
    argv = ["publish", "--receipt", "no-such-receipt.json", "--out", "o.json"]
    without = _run(places, *argv)
    assert without.returncode == 2 and b"--repository" in without.stderr
    places.user(
        '[keys]\noperator_private_key_file = "op.pem"\noperator_public_key_file = "op.pub"\n'
        '[operator]\nledger = "ledger"\nrepository = "acme/w"\nremote = "origin"\n'
    )
    with_file = _run(places, *argv)
    _clean_refusal(with_file, "publish-receipt-missing")  # past parsing: the file filled it
    places.repository('[operator]\nledger = "/attacker"\n')
    _clean_refusal(_run(places, *argv), "config-key-user-only")


def test_show_for_a_command_line_names_the_flags_it_gives(places: Places, tmp_path: Path) -> None:
    places.user('[models]\nmodel = "m-user"\nmax_turns = 30\n[batch]\ntest_command = ["pytest"]\n')
    places.repository("[timeouts]\nprovider_ms = 5000\n")
    words = ["batch", "run", "--repo", str(places.repo), "--jobs", "7", "--model", "m-flag"]
    proc = _run(places, "config", "show", "--json", "--", *words, "--test", "--", "make", "x")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert_valid("config-show", doc)
    assert doc["command"] == "batch run"
    got = {v["key"]: (v["value"], v["source"]) for v in doc["values"]}
    assert got["models.model"] == ("m-flag", "flag")
    assert got["batch.jobs"] == (7, "flag")
    assert got["batch.test_command"] == (["make", "x"], "flag")
    assert got["models.max_turns"] == (30, "user")
    assert got["timeouts.provider_ms"] == (5000, "repository")  # found through --repo
    assert "worker.jobs" not in got and "operator.ledger" not in got  # not batch run's keys
    text = _run(places, "config", "show", "--", *words, cwd=tmp_path).stdout.decode()
    assert "command: factory batch run" in text and "from the flag --jobs" in text
    # Negative control: without the flags, the files' values and the defaults.
    plain = json.loads(_run(places, "config", "show", "--json", "--", *words[:4]).stdout)
    got = {v["key"]: (v["value"], v["source"]) for v in plain["values"]}
    assert got["models.model"] == ("m-user", "user") and got["batch.jobs"] == (2, "default")
    assert got["batch.test_command"] == (["pytest"], "user")
    _clean_refusal(_run(places, "config", "show", "--", "runs"), "config-no-keys-for-command")


def test_a_refused_value_from_a_file_says_which_file_gave_it(places: Places) -> None:
    """The command refuses ``--timeout-ms`` by the flag's name; the note names the key."""
    places.user("[timeouts]\nprovider_ms = 5\n")
    argv = ["agent", "--task", "t", "--out", "o.json", "--worktree", str(places.repo)]
    proc = _run(places, *argv)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "--timeout-ms" in err
    assert f"--timeout-ms from timeouts.provider_ms in {places.user_file}" in err
    flagged = _run(places, *argv, "--timeout-ms", "5")  # the twin: the flag's own value
    assert flagged.returncode == 2 and b"factory.toml gave" not in flagged.stderr


def test_without_a_home_folder_no_user_file_is_read(places: Places, tmp_path: Path) -> None:
    """A relative HOME would make '~/.config/…' a file of the folder the command runs in."""
    trap = places.repo / "~" / ".config" / "factory" / "factory.toml"
    trap.parent.mkdir(parents=True)
    trap.write_text('[operator]\nledger = "/attacker"\n')
    env = {**os.environ, "HOME": "~"}
    env.pop("XDG_CONFIG_HOME")
    proc = run_factory(["config", "path"], cwd=places.repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[1] == "user\t(no home folder)"
    shown = run_factory(["config", "show"], cwd=places.repo, env=env)
    assert b"/attacker" not in shown.stdout and b"(no home folder: none)" in shown.stdout
    # The twin: an absolute HOME reads its ~/.config/factory/factory.toml.
    home = tmp_path / "home"
    (home / ".config" / "factory").mkdir(parents=True)
    (home / ".config" / "factory" / "factory.toml").write_text('[operator]\nledger = "/mine"\n')
    proc = run_factory(["config", "show"], cwd=places.repo, env={**env, "HOME": str(home)})
    assert b"= /mine" in proc.stdout


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["agent", "--max-turns", "abc"], "invalid int value"),
        (["agent", "--bogus"], "factory agent: unrecognized arguments: --bogus"),
        (["agent", "--max-turns", "3", "--max-turns", "4"], "given more than once"),
        (["agent", "--max-t", "3"], "factory agent: unrecognized arguments"),
        (["agent", "--max-budget-usd", "-1"], "--max-budget-usd must be"),
        (["batch", "run", "--task-deadline-s", "nan"], "not a positive, finite number"),
    ],
)
def test_show_checks_a_command_line_as_the_command_does(
    places: Places, words: list[str], said: str
) -> None:
    """What config show prints is what would run: a line the command refuses is refused."""
    proc = _run(places, "config", "show", "--", *words)
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    assert said in proc.stderr.decode()


def test_show_of_a_good_command_line_prints_its_values(places: Places) -> None:
    """The twin: required flags may be left out; the values given are shown."""
    proc = _run(places, "config", "show", "--json", "--", "agent", "--max-turns", "3")
    assert proc.returncode == 0, proc.stderr
    values = {v["key"]: v for v in json.loads(proc.stdout)["values"]}
    assert values["models.max_turns"]["value"] == 3
    assert values["models.max_turns"]["source"] == "flag"


def test_show_checks_a_file_value_as_the_command_does(places: Places) -> None:
    places.user('[models]\nmodel = "--dangerously-skip-permissions"\n')
    proc = _run(places, "config", "show", "--", "agent")
    assert proc.returncode == 2 and b"models.model" in proc.stderr


def test_show_text_writes_a_list_as_the_file_would(places: Places) -> None:
    """A test command whose word holds a space reads back as three words, not four."""
    places.user('[batch]\ntest_command = ["pytest", "-q", "a b"]\n')
    text = _run(places, "config", "show").stdout.decode()
    assert 'batch.test_command              = ["pytest", "-q", "a b"]' in text
    # Twin: a scalar keeps its plain form; a whole number of seconds is shown as written.
    places.user("[batch]\njobs = 3\n[timeouts]\ntask_deadline_s = 1800\nbatch_deadline_s = 2.5\n")
    text = _run(places, "config", "show").stdout.decode()
    assert "batch.jobs                      = 3\n" in text
    assert "timeouts.task_deadline_s        = 1800\n" in text
    assert "timeouts.batch_deadline_s       = 2.5\n" in text


def test_show_refuses_a_model_choice_the_commands_would_refuse(places: Places) -> None:
    """Plain ``config show`` judges a file's model choices as agent and batch run do, naming
    the file and the key; its twin in range is shown."""
    places.repository("[models]\nmax_turns = 0\n")
    err = _clean_refusal(_run(places, "config", "show"), "config-value-invalid")
    assert f"{places.repo_file}: models.max_turns" in err
    places.repository("[models]\nmax_turns = 7\n")
    ok = _run(places, "config", "show")
    assert ok.returncode == 0 and "models.max_turns                = 7\n" in ok.stdout.decode()


def test_path_names_a_file_the_loader_would_refuse(places: Places) -> None:
    """``config path`` says what ``config show`` would do: a folder or a FIFO named
    factory.toml is refused, not absent; a repository's symbolic link likewise."""
    places.user("")
    places.repo_file.mkdir()
    assert b"\trefused: not a regular file\n" in _run(places, "config", "path").stdout
    _clean_refusal(_run(places, "config", "show"), "config-not-regular")
    places.repo_file.rmdir()
    os.mkfifo(places.repo_file)
    assert b"\trefused: not a regular file\n" in _run(places, "config", "path").stdout
    places.repo_file.unlink()
    places.repo_file.symlink_to(places.user_file)
    assert b"\trefused: a symbolic link\n" in _run(places, "config", "path").stdout
    # Twin: regular files are present.
    places.repo_file.unlink()
    places.repository("")
    lines = _run(places, "config", "path").stdout.decode().splitlines()
    assert lines[0].endswith("\tpresent") and lines[1].endswith("\tpresent")
