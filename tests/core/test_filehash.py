"""The one regular-file hasher (factory.filehash; SPEC F-4, F-6, A-4, A-7)."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from factory import filehash
from factory.filehash import CHUNK, FileHasher, NotRegular, digest_file, hasher


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, 3 * CHUNK + 7])
def test_size_and_sha256_of_a_regular_file(tmp_path: Path, size: int) -> None:
    data = (b"0123456789abcdef" * (size // 16 + 1))[:size]
    (tmp_path / "f").write_bytes(data)
    assert digest_file(tmp_path / "f") == (size, hashlib.sha256(data).hexdigest())


def test_relative_to_a_folder_descriptor(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert FileHasher().digest_at("f", dir_fd=fd) == (3, hashlib.sha256(b"abc").hexdigest())
    finally:
        os.close(fd)


def test_a_symlink_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"secret")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        digest_file(tmp_path / "link")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotRegular):
        digest_file(tmp_path / "fifo")
    with pytest.raises(NotRegular):
        digest_file(tmp_path)  # a folder opens, but is not a regular file either


def test_a_file_that_grew_is_hashed_as_read(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        got = FileHasher().digest_fd(fd, 10)  # fstat said 10 bytes, 100 are there now
    finally:
        os.close(fd)
    assert got == (100, hashlib.sha256(b"x" * 100).hexdigest())


def test_each_thread_has_its_own_hasher() -> None:
    mine = hasher()
    assert hasher() is mine
    other: list[FileHasher] = []
    t = threading.Thread(target=lambda: other.append(filehash.hasher()))
    t.start()
    t.join()
    assert other and other[0] is not mine
