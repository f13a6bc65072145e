"""Reading one factory.toml: every refusal class with its twin that is accepted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.config.load import MAX_BYTES, Role, read
from factory.errors import FactoryError, UsageError


def _refused(path: Path, role: Role = "user") -> FactoryError:
    with pytest.raises(UsageError) as caught:
        read(path, role)
    assert caught.value.exit_code == 2
    assert str(path) in caught.value.fact
    return caught.value


def test_missing_file_is_no_config(tmp_path: Path) -> None:
    assert read(tmp_path / "factory.toml", "user") is None
    assert read(tmp_path / "file" / "factory.toml", "repository") is None


def test_a_good_file_gives_typed_values(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(
        '[models]\nmodel = "m"\nmax_turns = 12\nmax_budget_usd = 2.5\n'
        "[timeouts]\ntask_deadline_s = 30\n"
        '[batch]\ntest_command = ["pytest", "-q"]\n'
    )
    got = read(path, "user")
    assert got is not None and got.role == "user" and got.path == path
    assert got.values == {
        "models.model": "m",
        "models.max_turns": 12,
        "models.max_budget_usd": "2.5",
        "timeouts.task_deadline_s": 30.0,
        "batch.test_command": ["pytest", "-q"],
    }


def test_paths_are_relative_to_the_file_and_expand_home(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(
        '[keys]\noperator_private_key_file = "keys/op.pem"\n[operator]\nledger = "~/l"\n'
    )
    got = read(path, "user")
    assert got is not None
    assert got.values["keys.operator_private_key_file"] == str(tmp_path / "keys" / "op.pem")
    assert got.values["operator.ledger"] == str(Path.home() / "l")


def test_a_folder_or_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    folder = tmp_path / "factory.toml"
    folder.mkdir()
    assert _refused(folder).code == "config-not-regular"
    fifo = tmp_path / "fifo" / "factory.toml"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert _refused(fifo, "repository").code == "config-not-regular"


def test_a_device_is_refused() -> None:
    with pytest.raises(UsageError) as caught:
        read(Path("/dev/null"), "user")
    assert caught.value.code == "config-not-regular"


def test_a_repository_file_may_not_be_a_symlink_a_user_file_may(tmp_path: Path) -> None:
    target = tmp_path / "real.toml"
    target.write_text('[models]\nmodel = "m"\n')
    link = tmp_path / "factory.toml"
    link.symlink_to(target)
    assert _refused(link, "repository").code == "config-not-regular"
    got = read(link, "user")
    assert got is not None and got.values == {"models.model": "m"}


def test_too_large_is_refused_and_its_twin_is_read(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_bytes(b"#" * (MAX_BYTES + 1))
    assert _refused(path).code == "config-too-large"
    path.write_bytes(b"#" * MAX_BYTES)
    assert read(path, "user") is not None


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_bytes(b'[models]\nmodel = "\xff"\n')
    error = _refused(path)
    assert error.code == "config-not-utf8" and "line 2" in error.fact
    path.write_bytes('[models]\nmodel = "é"\n'.encode())
    assert read(path, "user") is not None


def test_invalid_toml(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_text('[models\nmodel = "m"\n')
    assert _refused(path).code == "config-invalid-toml"
    path.write_text('[models]\nmodel = "m"\n')
    assert read(path, "user") is not None


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[models]\nmodle = "m"\n', "models.modle"),
        ("[model]\nmodel = 1\n", "model"),
        ('[models]\nmodel = "m"\n[extra]\nx = 1\n', "extra"),
        ('[batch]\nremote = "r"\n', "batch.remote"),  # temporal-only: not configurable
    ],
)
def test_unknown_key_or_table_is_named(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    error = _refused(path)
    assert error.code == "config-unknown-key" and named in error.fact


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[models]\nmax_turns = "12"\n', "models.max_turns"),
        ("[models]\nmax_turns = true\n", "models.max_turns"),
        ("[models]\nmodel = 3\n", "models.model"),
        ("[models]\nmax_budget_usd = true\n", "models.max_budget_usd"),
        ('[timeouts]\ntask_deadline_s = "1"\n', "timeouts.task_deadline_s"),
        ('[batch]\ntest_command = "pytest -q"\n', "batch.test_command"),
        ("[batch]\ntest_command = []\n", "batch.test_command"),
        ('[batch]\ntest_command = ["pytest", 1]\n', "batch.test_command"),
        ("models = 1\n", "models"),
        ("[batch]\njobs = 1979-05-27\n", "batch.jobs"),
    ],
)
def test_wrong_type_is_named(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    error = _refused(path)
    assert error.code == "config-wrong-type" and key in error.fact


SECRET = "hunter2-Zq8v-do-not-print"


@pytest.mark.parametrize(
    "text",
    [
        f'[models]\napi_key = "{SECRET}"\n',
        f'[models]\ngithub_token = "{SECRET}"\n',
        f'[operator]\npassword = "{SECRET}"\n',
        f'[keys]\npassphrase = "{SECRET}"\n',
        f'[secrets]\nx = "{SECRET}"\n',
        f'[keys]\noperator_private_key = "{SECRET}"\n',
        f'[keys]\noperator_private_key_file = "-----BEGIN PRIVATE KEY-----{SECRET}"\n',
        f'[models]\nmodel = "ghp_{SECRET}"\n',
        f'[models]\nmodel = "sk-ant-{SECRET}"\n',
        f'[batch]\ntest_command = ["x", "github_pat_{SECRET}"]\n',
        f'[models]\nmodel = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.{SECRET}"\n',  # a JWT
        f'[models]\nmodel = "Bearer {SECRET}"\n',
        f'[models]\nreviewer_model = "AIzaSyA1234567890abcdefghijklmnopq{SECRET}"\n',
    ],
)
@pytest.mark.parametrize("role", ["user", "repository"])
def test_a_secret_is_refused_and_never_echoed(tmp_path: Path, text: str, role: Role) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    error = _refused(path, role)
    assert error.code == "config-secret-refused"
    assert SECRET not in error.message and SECRET not in error.shown()


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "eyJ", "bearer", "AIza-short", "gpt-5"])
def test_a_model_name_is_not_a_secret(tmp_path: Path, model: str) -> None:
    """The twins of the shapes above: ordinary model names are read."""
    path = tmp_path / "factory.toml"
    path.write_text(f'[models]\nmodel = "{model}"\n')
    got = read(path, "user")
    assert got is not None and got.values["models.model"] == model


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
@pytest.mark.parametrize("key", ["task_deadline_s", "batch_deadline_s"])
def test_a_deadline_is_a_finite_number(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(f"[timeouts]\n{key} = {value}\n")
    error = _refused(path)
    assert error.code == "config-wrong-type" and f"timeouts.{key}" in error.fact
    path.write_text(f"[timeouts]\n{key} = 90.5\n")  # the twin
    got = read(path, "user")
    assert got is not None and got.values[f"timeouts.{key}"] == 90.5


def test_a_key_file_path_is_not_a_secret(tmp_path: Path) -> None:
    """The twin: a key *path* under a key-like name is read."""
    path = tmp_path / "factory.toml"
    path.write_text('[keys]\noperator_private_key_file = "/k/op.pem"\n')
    got = read(path, "user")
    assert got is not None and got.values["keys.operator_private_key_file"] == "/k/op.pem"


@pytest.mark.parametrize(
    "text",
    [
        '[keys]\noperator_private_key_file = "/attacker/op.pem"\n',
        '[keys]\noperator_public_key_file = "/attacker/op.pub"\n',
        '[operator]\nledger = "/attacker/ledger"\n',
        '[operator]\nforge_url = "https://attacker.example/api"\n',
        '[operator]\nremote = "attacker"\n',
        '[operator]\nrepository = "attacker/repo"\n',
        "[batch]\nper_login = 8\n",
        '[batch]\ntest_command = ["sh", "-c", "curl attacker"]\n',
        "[batch]\njobs = 64\n",
        "[worker]\njobs = 64\n",
    ],
)
def test_a_repository_may_not_redirect_authority(tmp_path: Path, text: str) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    assert _refused(path, "repository").code == "config-key-user-only"
    assert read(path, "user") is not None  # the twin: the user's own file may


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("[models]\nmax_turns = 41\n", False),
        ("[models]\nmax_turns = 40\n", True),
        ("[models]\nmax_budget_usd = 5.01\n", False),
        ('[models]\nmax_budget_usd = "1000"\n', False),
        ('[models]\nmax_budget_usd = "5"\n', True),
        ("[models]\nmax_budget_usd = 0.5\n", True),
    ],
)
def test_a_repository_may_only_lower_the_caps(tmp_path: Path, text: str, ok: bool) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    if ok:
        assert read(path, "repository") is not None
    else:
        assert _refused(path, "repository").code == "config-repository-raises-cap"
    assert read(path, "user") is not None  # the user may raise them


def _toml_after(text: str, marker: str) -> str:
    start = text.index(marker)
    block = text[text.index("```toml\n", start) + len("```toml\n") :]
    return block[: block.index("```")]


def test_the_documented_examples_are_valid_user_files(tmp_path: Path) -> None:
    """The README's and 'factory config --help''s examples read without a refusal."""
    from factory.cli.config_cmd import HELP

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = HELP[HELP.index("  [models]\n") : HELP.index("Every key")]
    for text in (_toml_after(readme, "### Configuration file"), example):
        path = tmp_path / "factory.toml"
        path.write_text("\n".join(line.strip() for line in text.splitlines()) + "\n")
        got = read(path, "user")
        assert got is not None and len(got.values) >= 8


@pytest.mark.parametrize(
    "text",
    [
        f'[models]\n"ghp_{SECRET}" = 1\n',  # a token pasted as a key name
        f'"sk-{SECRET}" = 1\n',
        f'[models]\nmodel = "ghp_{SECRET}"\n[[\n',  # invalid TOML holding a secret
        f'[models]\nmax_turns = "{SECRET}"\n',  # a wrong type holding text
        f'[models]\nnot_a_key = "{SECRET}"\n',
    ],
)
def test_no_refusal_prints_a_value(tmp_path: Path, text: str) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    error = _refused(path, "repository")
    assert SECRET not in error.message and SECRET not in error.shown()
