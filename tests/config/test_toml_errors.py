"""TOML errors that name what is wrong: a key given twice, a byte-order mark (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.config.load import read
from factory.errors import UsageError


def _error(path: Path) -> str:
    with pytest.raises(UsageError) as caught:
        read(path, "user")
    assert caught.value.code == "config-invalid-toml" and caught.value.exit_code == 2
    assert str(path) in caught.value.fact and "\n" not in caught.value.fact
    return caught.value.fact


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("[batch]\njobs = 1\njobs = 2\n", "jobs", 3),
        ("[models]\nmax_turns = 3\n  max_turns=4\n", "max_turns", 3),
        ("timeouts.provider_ms = 1000\ntimeouts.provider_ms = 2000\n", "timeouts.provider_ms", 2),
    ],
)
def test_a_key_given_twice_is_named(tmp_path: Path, text: str, key: str, line: int) -> None:
    path = tmp_path / "factory.toml"
    path.write_text(text)
    fact = _error(path)
    assert f"line {line}: key {key} is given twice" in fact
    path.write_text(text.rsplit("\n", 2)[0] + "\n")  # twin: the key once is read
    assert read(path, "user") is not None


def test_a_byte_order_mark_is_named(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_bytes(b"\xef\xbb\xbf[batch]\njobs = 2\n")
    assert "byte-order mark (BOM)" in _error(path)
    path.write_bytes(b"[batch]\njobs = 2\n")  # twin: the same file without it
    config = read(path, "user")
    assert config is not None and config.values["batch.jobs"] == 2


def test_other_toml_errors_keep_tomllib_s_words(tmp_path: Path) -> None:
    path = tmp_path / "factory.toml"
    path.write_text("[batch\n")
    assert "not valid TOML" in _error(path)
