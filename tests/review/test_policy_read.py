"""Reading ``--policy`` and ``--replay-preserved`` files (issue 25): a FIFO, a directory or
an oversized file is refused before a byte is read; a symlink a person names is followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.review.errors import ReviewInputInvalid
from factory.review.incident import load_preserved
from factory.review.policy import POLICY_LIMIT, default_policy, load_policy


def _policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.json"
    path.write_bytes(default_policy().raw)
    return path


def test_a_policy_file_and_a_symlink_to_it_load_the_same_bytes(tmp_path: Path) -> None:
    path = _policy_file(tmp_path)
    (tmp_path / "link.json").symlink_to(path.name)
    assert load_policy(path).hash == default_policy().hash
    assert load_policy(tmp_path / "link.json").hash == default_policy().hash


def test_a_fifo_policy_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "policy.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ReviewInputInvalid, match="not a regular file"):
        load_policy(fifo)  # no writer: a blocking open would hang here


def test_an_oversized_policy_is_refused_with_the_readers_words(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (POLICY_LIMIT + 1))
    with pytest.raises(ReviewInputInvalid, match=f"the policy is larger than {POLICY_LIMIT}"):
        load_policy(path)
    path.write_bytes(b" " * POLICY_LIMIT)  # twin: at the limit it is read (and is not JSON)
    with pytest.raises(ReviewInputInvalid, match="not one JSON value"):
        load_policy(path)


def test_a_directory_or_fifo_artifact_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "artifact"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(ReviewInputInvalid, match="cannot read --replay-preserved"):
            load_preserved(path)
