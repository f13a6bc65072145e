"""Precedence, applied by the CLI once: flag > repository file > user file > default.

Parsed with the real parsers through :func:`parse_with_config`, the function
``run_command`` parses every command line with."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from factory.cli.config_apply import SOURCES, command_path, parse_with_config
from factory.cli.main import build_parser
from factory.errors import UsageError
from tests.support.config_places import Places
from tests.support.git import add_linked_worktree, git


def _agent(places: Places, *flags: str) -> argparse.Namespace:
    argv = ["agent", "--task", "t", "--out", "o", "--repo", str(places.repo), *flags]
    return parse_with_config(build_parser("agent_cmd"), argv, places.env)


def _batch(places: Places, *flags: str) -> argparse.Namespace:
    argv = ["batch", "run", "tasks.toml", "--repo", str(places.repo), "--out", "b", *flags]
    return parse_with_config(build_parser("batch_cmd"), argv, places.env)


def test_default_when_no_file(places: Places) -> None:
    args = _agent(places)
    assert (args.model, args.max_turns, args.timeout_ms) == (None, None, 600_000)
    assert getattr(args, SOURCES) == {}


def test_user_file_beats_default(places: Places) -> None:
    user = places.user('[models]\nmodel = "m-user"\nmax_turns = 30\n')
    args = _agent(places)
    assert (args.model, args.max_turns) == ("m-user", 30)
    assert getattr(args, SOURCES)["model"].file == user


def test_repository_file_beats_user_file(places: Places) -> None:
    places.user('[models]\nmodel = "m-user"\nmax_turns = 30\n[timeouts]\nprovider_ms = 7000\n')
    repo = places.repository('[models]\nmodel = "m-repo"\n')
    args = _agent(places)
    assert (args.model, args.max_turns, args.timeout_ms) == ("m-repo", 30, 7000)
    sources = getattr(args, SOURCES)
    assert sources["model"].source == "repository" and sources["model"].file == repo
    assert sources["max_turns"].source == "user"


def test_flag_beats_both_files(places: Places) -> None:
    places.user('[models]\nmodel = "m-user"\n[timeouts]\nprovider_ms = 7000\n')
    places.repository('[models]\nmodel = "m-repo"\n')
    args = _agent(places, "--model", "m-flag", "--timeout-ms", "600000")
    assert (args.model, args.timeout_ms) == ("m-flag", 600_000)
    assert getattr(args, SOURCES) == {}


def test_the_repository_is_the_one_the_flags_name_else_the_current_one(
    places: Places, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    places.repository('[models]\nmodel = "m-repo"\n')
    git(places.repo, "add", "factory.toml")
    git(places.repo, "commit", "-q", "-m", "config")
    linked = add_linked_worktree(places.repo, tmp_path / "linked")
    (linked / "factory.toml").write_text('[models]\nmodel = "m-linked"\n')
    monkeypatch.chdir(tmp_path)  # not a repository: only the flags name one
    assert _agent(places).model == "m-repo"
    argv = ["agent", "--task", "t", "--out", "o", "--worktree"]
    parser = build_parser("agent_cmd")
    assert parse_with_config(parser, [*argv, str(linked)], places.env).model == "m-linked"
    assert parse_with_config(parser, [*argv, "missing"], places.env).model is None
    publish = ["publish", "--receipt", "r", "--out", "o", "--repository", "a/b", "--remote", "o",
               "--private-key", "p", "--public-key", "q", "--ledger", "l"]  # fmt: skip
    places.user('[operator]\nforge_url = "https://forge.example/api"\n')
    places.repository('[models]\nmodel = "m-repo"\n[operator]\nledger = "/attacker"\n')
    assert parse_with_config(build_parser("publish_cmd"), publish, places.env).forge_url
    monkeypatch.chdir(places.repo / ".git")  # inside the git directory: no checkout top
    assert parse_with_config(build_parser("publish_cmd"), publish, places.env).forge_url
    monkeypatch.chdir(places.repo)  # without a flag naming one: the current repository's
    with pytest.raises(UsageError, match=r"operator\.ledger"):
        parse_with_config(build_parser("publish_cmd"), publish, places.env)


def test_a_key_reaches_only_the_commands_that_have_its_dest(places: Places) -> None:
    places.user(
        '[batch]\njobs = 5\nper_login = 3\n[worker]\njobs = 9\n[operator]\nremote = "pushme"\n'
    )
    args = _batch(places)
    assert (args.jobs, args.per_login, args.remote) == (5, 3, None)  # operator.remote: not here
    worker = parse_with_config(
        build_parser("worker_cmd"), ["worker", "--temporal", "h:1", "--workdir", "w"], places.env
    )
    assert worker.jobs == 9
    # Negative control: a command without those dests is untouched.
    plain = parse_with_config(build_parser("runs_cmd"), ["runs", "--repo", str(places.repo)])
    assert not hasattr(plain, "jobs") and not hasattr(plain, SOURCES)


def test_test_command_from_the_user_file_and_the_flag_wins(places: Places) -> None:
    places.user('[batch]\ntest_command = ["pytest", "-q"]\n')
    assert _batch(places).test_argv == ["pytest", "-q"]
    assert _batch(places, "--test", "--", "make", "check").test_argv == ["make", "check"]


def test_required_flags_a_user_file_gives_may_be_left_out(places: Places, tmp_path: Path) -> None:
    argv = ["publish", "--receipt", "r.json", "--out", "o.json"]
    with pytest.raises(UsageError) as caught:
        parse_with_config(build_parser("publish_cmd"), argv, places.env)
    assert "--repository" in caught.value.fact  # the twin: without the file, still required
    places.user(
        '[keys]\noperator_private_key_file = "k/op.pem"\noperator_public_key_file = "/k/op.pub"\n'
        '[operator]\nledger = "/l"\nrepository = "acme/w"\nremote = "origin"\n'
    )
    args = parse_with_config(build_parser("publish_cmd"), argv, places.env)
    assert args.private_key == str(places.user_file.parent / "k" / "op.pem")
    assert (args.public_key, args.ledger, args.repository, args.remote) == (
        "/k/op.pub", "/l", "acme/w", "origin"
    )  # fmt: skip
    with pytest.raises(UsageError):  # a flag the file does not give stays required
        parse_with_config(build_parser("publish_cmd"), argv[:2], places.env)


def test_a_model_choice_from_a_file_is_checked_like_the_flag(places: Places) -> None:
    user = places.user("[models]\nmax_turns = 9999\n")
    with pytest.raises(UsageError) as caught:
        _agent(places)
    assert caught.value.code == "config-value-invalid"
    assert str(user) in caught.value.fact and "models.max_turns" in caught.value.fact
    assert _agent(places, "--max-turns", "5").max_turns == 5  # the flag wins: not judged
    places.user('[models]\nmodel = "bad model name"\n')
    with pytest.raises(UsageError, match=r"models\.model"):
        _agent(places)
    places.user('[models]\nmax_budget_usd = "2.505"\n')
    with pytest.raises(UsageError, match=r"models\.max_budget_usd"):
        _agent(places)
    places.user('[models]\nmax_budget_usd = 2.5\nmodel = "claude-x"\n')
    assert (_agent(places).max_budget_usd, _agent(places).model) == ("2.5", "claude-x")


def test_a_hostile_repository_cannot_redirect_keys_or_the_remote(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(places.repo)  # publish has no --repo: the current repository's file
    places.user(
        '[keys]\noperator_private_key_file = "/mine/op.pem"\n[operator]\nremote = "origin"\n'
    )
    argv = ["publish", "--receipt", "r", "--out", "o", "--repository", "a/b",
            "--public-key", "q", "--ledger", "l"]  # fmt: skip
    assert parse_with_config(build_parser("publish_cmd"), argv, places.env).remote == "origin"
    places.repository('[keys]\noperator_private_key_file = "/attacker/op.pem"\n')
    with pytest.raises(UsageError) as caught:
        parse_with_config(build_parser("publish_cmd"), argv, places.env)
    assert caught.value.code == "config-key-user-only"
    places.repository('[operator]\nremote = "attacker"\n')
    with pytest.raises(UsageError, match=r"operator\.remote"):
        parse_with_config(build_parser("publish_cmd"), argv, places.env)


def test_help_is_shown_even_with_a_broken_file(places: Places) -> None:
    places.user("[models\n")
    with pytest.raises(SystemExit):
        _agent(places, "--help")


def test_command_path_skips_the_values_of_options() -> None:
    parser = build_parser()
    assert command_path(parser, ["batch", "run", "x"]) == ("batch run", 2)
    assert command_path(parser, ["operator", "publish", "--remote", "run"]) == (
        "operator publish", 2
    )  # fmt: skip
    assert command_path(parser, ["--version"])[0] == ""
    assert command_path(parser, ["nosuch", "run"])[0] == ""


def test_operator_verify_keeps_the_recorded_key_and_ledger(places: Places) -> None:
    """Its defaults are what the receipt records: a file must not replace them."""
    places.user('[keys]\noperator_public_key_file = "/k/op.pub"\n[operator]\nledger = "/l"\n')
    argv = ["operator", "verify", "out.json"]
    args = parse_with_config(build_parser("operator_cmd"), argv, places.env)
    assert (args.public_key, args.ledger) == (None, None)
    run = ["operator", "plan", "--label", "x"]  # the twin: a command the keys do feed
    places.user('[operator]\nrepository = "acme/w"\n')
    assert parse_with_config(build_parser("operator_cmd"), run, places.env).repository == "acme/w"


@pytest.mark.parametrize(
    ("user", "tighter", "looser", "dest"),
    [
        ("[models]\nmax_turns = 30\n", "[models]\nmax_turns = 20\n",
         "[models]\nmax_turns = 35\n", "max_turns"),
        ('[models]\nmax_budget_usd = "3.5"\n', "[models]\nmax_budget_usd = 2\n",
         "[models]\nmax_budget_usd = 4.5\n", "max_budget_usd"),
        ("[timeouts]\nprovider_ms = 7000\n", "[timeouts]\nprovider_ms = 5000\n",
         "[timeouts]\nprovider_ms = 9000\n", "timeout_ms"),
        ("[timeouts]\ntask_deadline_s = 600\n", "[timeouts]\ntask_deadline_s = 60\n",
         "[timeouts]\ntask_deadline_s = 1e12\n", "task_deadline_s"),
        ("[timeouts]\nbatch_deadline_s = 7200\n", "[timeouts]\nbatch_deadline_s = 3600\n",
         "[timeouts]\nbatch_deadline_s = 99999999999\n", "deadline_s"),
    ],
)  # fmt: skip
def test_a_repository_may_only_tighten_the_limits_your_file_sets(
    places: Places, user: str, tighter: str, looser: str, dest: str
) -> None:
    """'Only lower' means lower than the value in effect, your own file's included."""
    places.user(user)
    places.repository(tighter)
    args = _batch(places)
    assert getattr(args, SOURCES)[dest].source == "repository"
    places.repository(looser)
    with pytest.raises(UsageError) as caught:
        _batch(places)
    assert caught.value.code == "config-repository-raises-cap"
    assert "your own" in caught.value.fact


def test_a_repository_may_not_raise_the_built_in_provider_timeout(places: Places) -> None:
    places.repository("[timeouts]\nprovider_ms = 1800000\n")
    with pytest.raises(UsageError) as caught:
        _agent(places)
    assert caught.value.code == "config-repository-raises-cap"
    places.repository("[timeouts]\nprovider_ms = 60000\n")  # the twin: a tighter one is used
    assert _agent(places).timeout_ms == 60_000
