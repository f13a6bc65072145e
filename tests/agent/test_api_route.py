"""The api route: provider keys only from a source the user named (--credentials FILE or
--credentials-env NAME), recorded as the route ``api`` and never as a value."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from factory.credentials import CredentialsRefused, from_env, from_file, load
from tests.agent.cli_helpers import agent_args, fake
from tests.support.layout import Layout

KEYS = {"anthropic_api_key": "sk-ant-named-0001", "codex_api_key": "sk-codex-named-0001"}


def _file(tmp: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp / "keys.json"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_private_file_and_a_named_variable_give_the_keys(tmp_path: Path) -> None:
    got = from_file(_file(tmp_path, json.dumps(KEYS)))
    assert (got.anthropic_api_key, got.codex_api_key, got.source) == (*KEYS.values(), "file")
    toml = tmp_path / "keys.toml"
    toml.write_text("".join(f'{k} = "{v}"\n' for k, v in KEYS.items()))
    toml.chmod(0o600)
    assert from_file(toml).codex_api_key == KEYS["codex_api_key"]
    env = from_env("MY_KEYS", {"MY_KEYS": json.dumps(KEYS)})
    assert env.source == "env:MY_KEYS" and "sk-" not in repr(env)
    # The caller's own variables are never a source: nothing named, nothing read.
    assert load(None, None, {"ANTHROPIC_API_KEY": "x" * 20, "CODEX_API_KEY": "y" * 20}) is None


@pytest.mark.parametrize(
    ("text", "mode", "code"),
    [
        (json.dumps(KEYS), 0o644, "credentials-exposed"),
        (json.dumps(KEYS), 0o640, "credentials-exposed"),
        (json.dumps({**KEYS, "extra": "x"}), 0o600, "credentials-invalid"),
        (
            json.dumps({"anthropic_api_key": KEYS["anthropic_api_key"]}),
            0o600,
            "credentials-invalid",
        ),
        (json.dumps({**KEYS, "codex_api_key": "short"}), 0o600, "credentials-invalid"),
        (json.dumps({**KEYS, "codex_api_key": "has space inside"}), 0o600, "credentials-invalid"),
        ("not json or toml [", 0o600, "credentials-invalid"),
        ('{"anthropic_api_key": 1, "codex_api_key": 2}', 0o600, "credentials-invalid"),
    ],
)
def test_bad_credentials_are_refused_without_their_values(
    tmp_path: Path, text: str, mode: int, code: str
) -> None:
    with pytest.raises(CredentialsRefused) as info:
        from_file(_file(tmp_path, text, mode))
    assert info.value.code == code
    assert "sk-" not in str(info.value)


def test_a_missing_variable_or_two_sources_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CredentialsRefused, match="not set"):
        from_env("NOPE", {})
    with pytest.raises(CredentialsRefused):
        load(tmp_path / "k.json", "NAME", {})
    with pytest.raises(CredentialsRefused) as info:
        from_file(tmp_path / "missing.json")
    assert info.value.code == "credentials-unreadable"


def test_the_receipt_records_the_api_route_and_never_a_key(layout: Layout) -> None:
    env_keys = json.dumps(KEYS)
    os.environ["FACTORY_TEST_KEYS"] = env_keys
    try:
        done = fake("approve", agent_args(layout, "--credentials-env", "FACTORY_TEST_KEYS"))
    finally:
        del os.environ["FACTORY_TEST_KEYS"]
    assert done.returncode == 0, done.stderr[-2000:]
    receipt = json.loads(layout.receipt.read_text())
    assert receipt["route"] == "api" and receipt["execution"].startswith("api:")
    for path in [layout.receipt, *layout.evidence.iterdir()]:
        data = path.read_bytes()
        assert all(v.encode() not in data for v in KEYS.values()), path.name
    assert all(v.encode() not in done.stdout + done.stderr for v in KEYS.values())
    refused = fake("approve", agent_args(layout, "--credentials-env", "UNSET_NAME_1"))
    assert refused.returncode == 2 and b"factory: credentials-env-missing:" in refused.stderr
