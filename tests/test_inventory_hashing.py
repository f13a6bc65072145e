"""The hashing stage re-checks every entry it opens (races after the listing) (SPEC F-6)."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from pathlib import Path

import pytest

from factory.inventory import hashing
from factory.inventory.hashing import hash_files
from factory.inventory.walk import list_files
from tests.support.inventory_ref import write


def _files(tmp_path: Path, n: int) -> tuple[list[str], list[str]]:
    rels = [f"f{i:04d}" for i in range(n)]
    for i, rel in enumerate(rels):
        write(tmp_path, rel, os.urandom(i % 50) * (i % 3))
    return rels, [str(tmp_path / r) for r in rels]


def _expected(paths: list[str]) -> tuple[list[str], int]:
    lines, total = [], 0
    for p in paths:
        data = Path(p).read_bytes()
        lines.append(f"{os.path.basename(p)}|{len(data)}|{hashlib.sha256(data).hexdigest()}")
        total += len(data)
    return lines, total


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_lines_in_input_order_for_any_worker_count(tmp_path: Path, workers: int) -> None:
    rels, paths = _files(tmp_path, 200)
    got = hash_files(rels, paths, workers=workers)
    lines, total = _expected(paths)
    assert "\n".join(got.lines) == "\n".join(lines)
    assert got.total_bytes == total
    assert got.problems == []


def test_threads_are_used_when_the_caller_has_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rels, paths = _files(tmp_path, 100)
    forked: list[int] = []
    monkeypatch.setattr(hashing.os, "fork", lambda: forked.append(1) or 0)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        got = hash_files(rels, paths, workers=2)
    finally:
        stop.set()
        other.join()
    assert forked == []
    assert "\n".join(got.lines) == "\n".join(_expected(paths)[0])


def _swap_fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _swap_symlink(p: Path) -> None:
    p.unlink()
    p.symlink_to(p.parent / "f0000")


def _swap_missing(p: Path) -> None:
    p.unlink()


SWAPS = {
    "fifo": (_swap_fifo, "fifo-refused"),
    "symlink": (_swap_symlink, "symlink-refused"),
    "missing": (_swap_missing, "changed-during-walk"),
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_entry_swapped_after_listing_is_refused_not_hung(
    tmp_path: Path, swap: str, workers: int
) -> None:
    rels, paths = _files(tmp_path, 120)
    make, code = SWAPS[swap]
    make(Path(paths[77]))
    got = hash_files(rels, paths, workers=workers)
    assert [(p.path, p.code) for p in got.problems] == [("f0077", code)]
    assert len(got.lines) == 119  # every other file still hashed


def test_socket_swapped_in_is_refused(tmp_path: Path) -> None:
    rels, paths = _files(tmp_path, 3)
    os.unlink(paths[1])
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(paths[1])
        got = hash_files(rels, paths, workers=1)
    finally:
        sock.close()
    assert [(p.path, p.code) for p in got.problems] == [("f0001", "socket-refused")]


def test_big_file_hashed_in_chunks_with_bounded_buffer(tmp_path: Path) -> None:
    size = 5 * hashing.CHUNK + 123
    data = os.urandom(1 << 16) * (size // (1 << 16) + 1)
    write(tmp_path, "big", data[:size])
    reads: list[int] = []
    real_readv = os.readv

    def counting_readv(fd: int, buffers: list[bytearray]) -> int:
        n = real_readv(fd, buffers)
        reads.append(n)
        return n

    hashing.os.readv = counting_readv  # type: ignore[assignment]
    try:
        got = hash_files(["big"], [str(tmp_path / "big")], workers=1)
    finally:
        hashing.os.readv = real_readv  # type: ignore[assignment]
    assert got.lines == [f"big|{size}|{hashlib.sha256(data[:size]).hexdigest()}"]
    assert max(reads) <= hashing.CHUNK
    assert len(reads) == 6  # five full chunks, then the short read that ends the file


def test_refusals_are_reported_ordinal_first_with_a_count(tmp_path: Path) -> None:
    from factory.inventory.recipe import InventoryRefused

    write(tmp_path, "ok", "x")
    for name in ["zz-link", "a-link", "\U0001f600-link", "\uff61-link"]:
        (tmp_path / name).symlink_to(tmp_path / "ok")
    with pytest.raises(InventoryRefused) as info:
        list_files(tmp_path)
    assert info.value.code == "symlink-refused"
    assert info.value.message.startswith("a-link: symlink refused")
    assert info.value.message.endswith("(3 more refused entries)")
    (tmp_path / "a-link").unlink()
    (tmp_path / "zz-link").unlink()
    with pytest.raises(InventoryRefused) as again:
        list_files(tmp_path)
    assert again.value.message.startswith("\U0001f600-link: ")  # UTF-16 order, not code points


def test_default_workers_honours_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACTORY_DIGEST_WORKERS", "3")
    assert hashing.default_workers() == 3
    monkeypatch.setenv("FACTORY_DIGEST_WORKERS", "zero")
    assert hashing.default_workers() == len(os.sched_getaffinity(0))
