"""The hashing stage re-checks every entry it opens (races after the listing) (SPEC F-6)."""

from __future__ import annotations

import hashlib
import inspect
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from factory import filehash
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
    got = hash_files(rels, tmp_path, workers=workers)
    lines, total = _expected(paths)
    assert "\n".join(got.lines) == "\n".join(lines)
    assert got.total_bytes == total
    assert got.problems == []


def test_threads_are_used_when_the_caller_has_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rels, paths = _files(tmp_path, 100)
    forked: list[int] = []

    def no_fork() -> int:
        forked.append(1)
        raise AssertionError("forked while other threads run")

    monkeypatch.setattr(os, "fork", no_fork)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        got = hash_files(rels, tmp_path, workers=2)
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


def _swap_folder(p: Path) -> None:
    p.unlink()
    p.mkdir()


SWAPS = {
    "fifo": (_swap_fifo, "fifo-refused"),
    "folder": (_swap_folder, "changed-during-walk"),  # a folder is no refused kind
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
    got = hash_files(rels, tmp_path, workers=workers)
    assert [(p.path, p.code.name) for p in got.problems] == [("f0077", code)]
    assert len(got.lines) == 119  # every other file still hashed


def test_socket_swapped_in_is_refused(tmp_path: Path) -> None:
    rels, paths = _files(tmp_path, 3)
    os.unlink(paths[1])
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(paths[1])
        got = hash_files(rels, tmp_path, workers=1)
    finally:
        sock.close()
    assert [(p.path, p.code.name) for p in got.problems] == [("f0001", "socket-refused")]


def test_big_file_hashed_in_chunks_with_bounded_buffer(tmp_path: Path) -> None:
    size = 5 * filehash.CHUNK + 123
    data = os.urandom(1 << 16) * (size // (1 << 16) + 1)
    write(tmp_path, "big", data[:size])
    reads: list[int] = []
    real_readv = os.readv

    def counting_readv(fd: int, buffers: list[bytearray]) -> int:
        n = real_readv(fd, buffers)
        reads.append(n)
        return n

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "readv", counting_readv)
        got = hash_files(["big"], tmp_path, workers=1)
    assert got.lines == [f"big|{size}|{hashlib.sha256(data[:size]).hexdigest()}"]
    assert max(reads) <= filehash.CHUNK
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
    assert "(3 more refused entries)" in info.value.message
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


def test_interrupt_in_parent_stops_workers_promptly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    rels, _ = _files(tmp_path, 100)
    parent = os.getpid()
    real_work = hashing._work
    children: list[int] = []
    real_fork = os.fork

    def recording_fork() -> int:
        pid = real_fork()
        if pid:
            children.append(pid)
        return pid

    def slow_child_interrupted_parent(*args: object, **kwargs: object) -> object:
        if os.getpid() != parent:
            time.sleep(60)  # a worker that would take long to drain the queue
            return real_work(*args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(hashing, "_work", slow_child_interrupted_parent)
    monkeypatch.setattr(os, "fork", recording_fork)
    # Take the fork path even if some other test left a thread behind in this process.
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        hash_files(rels, tmp_path, workers=2)
    assert time.monotonic() - started < 20
    assert len(children) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(children[0], os.WNOHANG)  # already reaped: no zombie, no orphan


def test_worker_dies_with_its_parent(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    rels, _ = _files(tmp_path, 100)
    script = f"""
import os, sys, time
from factory.inventory import hashing
real = hashing._work
parent = os.getpid()
def work(*a, **k):
    if os.getpid() != parent:
        print(os.getpid(), flush=True)
        time.sleep(60)
    return real(*a, **k)
hashing._work = work
rels = {rels!r}
hashing.hash_files(rels, {str(tmp_path)!r}, workers=2)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    os.kill(proc.pid, 9)  # the parent dies without any chance to clean up
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as fh:
            if fh.read().split(")")[-1].split()[0] == "Z":
                break  # killed, waiting only to be reaped by init
        time.sleep(0.05)
    else:
        raise AssertionError("the worker outlived its parent")


@pytest.mark.parametrize("workers", [1, 2])
def test_folder_swapped_for_symlink_after_listing_is_refused(tmp_path: Path, workers: int) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    rels = [f"sub/f{i:03d}" for i in range(80)] + ["top.txt"]
    for rel in rels:
        write(root, rel, "inside " + rel)
        write(outside, rel.removeprefix("sub/"), "OUTSIDE")
    # After the listing, "sub" becomes a symlink to a folder outside holding the same names.
    (root / "sub").rename(tmp_path / "old-sub")
    (root / "sub").symlink_to(outside)
    got = hash_files(rels, root, workers=workers)
    assert {p.code.name for p in got.problems} == {"symlink-refused"}
    assert len(got.problems) == 80
    assert all("OUTSIDE" not in line for line in got.lines)
    assert got.lines == [f"top.txt|14|{hashlib.sha256(b'inside top.txt').hexdigest()}"]


def test_folder_replaced_by_file_after_listing_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "sub/a", "a")
    write(tmp_path, "b", "b")
    (tmp_path / "sub" / "a").unlink()
    (tmp_path / "sub").rmdir()
    write(tmp_path, "sub", "now a file")
    got = hash_files(["b", "sub/a"], tmp_path, workers=1)
    assert [(p.path, p.code.name) for p in got.problems] == [("sub/a", "changed-during-walk")]


def test_many_folders_exceed_the_descriptor_cache(tmp_path: Path) -> None:
    rels = sorted(f"d{i:03d}/e{j}/f" for i in range(100) for j in range(3))
    for rel in rels:
        write(tmp_path, rel, rel)
    before = len(os.listdir("/proc/self/fd"))
    got = hash_files(rels, tmp_path, workers=1)
    assert len(os.listdir("/proc/self/fd")) == before  # every folder fd was closed
    assert got.problems == []
    assert got.lines == [
        f"{rel}|{len(rel)}|{hashlib.sha256(rel.encode()).hexdigest()}" for rel in rels
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_multi_file_batches_keep_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.setattr(hashing, "MAX_BATCHES", 7)  # 29 files per batch
    rels, paths = _files(tmp_path, 200)
    os.unlink(paths[30])  # a refused file inside a batch leaves no gap in the document
    got = hash_files(rels, tmp_path, workers=workers)
    expected, total = _expected(paths[:30] + paths[31:])
    assert len(got.pieces) == 7
    assert got.lines == expected
    assert got.document() == "\n".join(expected).encode()
    assert got.total_bytes == total
    assert [p.path for p in got.problems] == ["f0030"]


def _nest(root: Path, depth: int) -> list[str]:
    """``depth`` folders ``a/a/…`` with a file every 300 levels and at the bottom.

    Returns the files' recipe paths."""
    root.mkdir()
    rels: list[str] = []
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(1, depth + 1):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
            if level % 300 == 0 or level == depth:
                f = os.open(f"f{level}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(f, str(level).encode())
                os.close(f)
                rels.append("a/" * level + f"f{level}")
    finally:
        os.close(fd)
    return rels


@pytest.mark.parametrize("workers", [1, 2])
def test_tree_deeper_than_the_recursion_limit(tmp_path: Path, workers: int) -> None:
    # The folders on a file's path were opened by recursing once per level: a tree of
    # 1,500 levels of "a/" (3,000 bytes, inside PATH_MAX) died with RecursionError (exit
    # 1). The limit is lowered here instead of building such a tree, because pytest's own
    # clean-up (shutil.rmtree) recurses per level too and would choke on it.
    from factory.inventory.service import digest_tree

    rels = _nest(tmp_path / "deep", 600)
    # Independent expectation: each file's line written out by hand.
    lines = [
        f"{rel}|{len(rel.rsplit('f', 1)[1])}|"
        f"{hashlib.sha256(rel.rsplit('f', 1)[1].encode()).hexdigest()}"
        for rel in sorted(rels)
    ]
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 200)
    try:
        result = digest_tree(tmp_path / "deep", workers=workers)
        # Twin: a shallow tree of the same shape digests under the same limit.
        shallow = _nest(tmp_path / "shallow", 100)
        assert digest_tree(tmp_path / "shallow", workers=workers).count == len(shallow) == 1
    finally:
        sys.setrecursionlimit(old_limit)
    assert result.document == "\n".join(lines).encode()
    assert result.count == 2
