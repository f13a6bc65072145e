"""Durable writes and physical containment (SPEC F-5, F-6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from factory.fsio import (
    OutputExists,
    atomic_replace,
    claim_dir,
    physically_inside,
    reserve,
    write_exclusive,
)

# --- exclusive creation ---------------------------------------------------------------

Writer = Callable[[Path, bytes], None]


@pytest.mark.parametrize("writer", [write_exclusive, reserve])
def test_exclusive_write_creates_new_file(tmp_path: Path, writer: Writer) -> None:
    target = tmp_path / "out.json"
    writer(target, b"first\n")
    assert target.read_bytes() == b"first\n"


@pytest.mark.parametrize("writer", [write_exclusive, reserve])
@pytest.mark.parametrize("kind", ["file", "folder", "dangling-symlink", "symlink-to-file"])
def test_exclusive_write_refuses_any_existing_entry(
    tmp_path: Path, writer: Writer, kind: str
) -> None:
    target = tmp_path / "out.json"
    other = tmp_path / "other"
    other.write_bytes(b"keep")
    if kind == "file":
        target.write_bytes(b"old")
    elif kind == "folder":
        target.mkdir()
    elif kind == "dangling-symlink":
        target.symlink_to(tmp_path / "missing")
    else:
        target.symlink_to(other)
    with pytest.raises(OutputExists) as info:
        writer(target, b"new")
    assert info.value.exit_code == 2
    assert info.value.code == "output-exists"
    # Nothing was written through the entry, and no dangling target was created.
    assert other.read_bytes() == b"keep"
    assert not (tmp_path / "missing").exists()
    if kind == "file":
        assert target.read_bytes() == b"old"


def test_write_exclusive_sets_mode(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        write_exclusive(tmp_path / "key", b"k", mode=0o600)
        write_exclusive(tmp_path / "pub", b"p", mode=0o644)
    finally:
        os.umask(old)
    assert (tmp_path / "key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "pub").stat().st_mode & 0o777 == 0o644


# --- atomic replace -------------------------------------------------------------------


def test_atomic_replace_replaces_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_replace(target, b"one")
    atomic_replace(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_atomic_replace_failure_removes_temp_and_keeps_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_replace(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


@pytest.mark.parametrize("exact", [True, False])
def test_atomic_replace_exact_mode_is_not_narrowed_by_the_umask(
    tmp_path: Path, exact: bool
) -> None:
    """``exact_mode`` keeps an edited file's mode; without it (the twin) the umask applies."""
    target = tmp_path / "config.toml"
    old_umask = os.umask(0o077)
    try:
        atomic_replace(target, b"x", mode=0o644, exact_mode=exact)
    finally:
        os.umask(old_umask)
    assert target.stat().st_mode & 0o777 == (0o644 if exact else 0o600)


def test_readers_see_old_or_new_never_half(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    old, new = b"a" * (1 << 20), b"b" * (1 << 20) + b"!"
    atomic_replace(target, old)
    seen: set[bytes] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            data = target.read_bytes()
            seen.add(data[:1] + data[-1:] + str(len(data)).encode())
            if data not in (old, new):
                seen.add(b"TORN")

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(40):
            atomic_replace(target, new if i % 2 == 0 else old)
    finally:
        stop.set()
        t.join()
    assert b"TORN" not in seen
    assert seen  # the reader really read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.bin"]


# --- claim_dir ------------------------------------------------------------------------

_CLAIMANT = """
import sys
from pathlib import Path
from factory.fsio import OutputExists, claim_dir
sys.stdin.read()  # start gate: released for every claimant at once
try:
    claim_dir(Path(sys.argv[1]))
except OutputExists:
    print("lost")
else:
    print("won")
"""


def test_claim_dir_exactly_one_winner_among_processes(tmp_path: Path) -> None:
    target = tmp_path / "run-0001"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIMANT, str(target)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in range(8)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
    results = []
    for p in procs:
        assert p.stdout is not None
        results.append(p.stdout.read().decode().strip())
        assert p.wait(timeout=60) == 0
    assert sorted(results) == ["lost"] * 7 + ["won"]
    assert target.is_dir()


def test_claim_dir_refuses_existing_file_and_twin(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    with pytest.raises(OutputExists):
        claim_dir(tmp_path / "taken")
    claim_dir(tmp_path / "free")
    assert (tmp_path / "free").stat().st_mode & 0o777 == 0o700


# --- physical containment -------------------------------------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "root" / "sub" / "f.txt").write_text("x")
    (tmp_path / "rootish").mkdir()  # shares a string prefix with "root"
    (tmp_path / "outside").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "rel",
    [
        "root",
        "root/sub",
        "root/sub/f.txt",
        "root/new-manifest.txt",
        "root/missing/deeper/m.txt",
        "outside/../root/m.txt",
        "root/sub/../m.txt",
    ],
)
def test_inside_direct_and_dotdot(layout: Path, rel: str) -> None:
    assert physically_inside(layout / rel, layout / "root") is True


@pytest.mark.parametrize(
    "rel",
    [
        "outside/m.txt",
        "rootish/m.txt",
        "root/../outside/m.txt",
        "root/sub/../../outside/m.txt",
        "m.txt",
    ],
)
def test_outside_direct_and_dotdot_twins(layout: Path, rel: str) -> None:
    assert physically_inside(layout / rel, layout / "root") is False


def test_inside_through_symlinked_alias_of_folder(layout: Path) -> None:
    alias = layout / "outside" / "alias"
    alias.symlink_to(layout / "root")
    assert physically_inside(alias / "m.txt", layout / "root") is True
    assert physically_inside(alias / "sub" / "new" / "m.txt", layout / "root") is True
    # The folder named through its alias is the same folder.
    assert physically_inside(layout / "root" / "m.txt", alias) is True


def test_outside_through_symlinked_alias_twin(layout: Path) -> None:
    alias = layout / "outside" / "alias"
    alias.symlink_to(layout / "rootish")
    assert physically_inside(alias / "m.txt", layout / "root") is False


def test_inside_through_symlink_then_dotdot(layout: Path) -> None:
    # Lexically <layout>/outside/m.txt; physically the kernel resolves link/.. to root.
    link = layout / "outside" / "link"
    link.symlink_to(layout / "root" / "sub")
    assert physically_inside(link / ".." / "m.txt", layout / "root") is True


def test_outside_through_symlink_then_dotdot_twin(layout: Path) -> None:
    (layout / "outside" / "deep").mkdir()
    (layout / "outside" / "link").symlink_to(layout / "outside" / "deep")
    # link/.. is physically <layout>/outside: outside, whichever way it is resolved.
    assert physically_inside(layout / "outside" / "link" / ".." / "m.txt", layout / "root") is False


def test_lexically_inside_fails_closed(layout: Path) -> None:
    (layout / "outside" / "deep").mkdir()
    link = layout / "root" / "link"
    link.symlink_to(layout / "outside" / "deep")
    # Physically link/.. is <layout>/outside, but the path names the root: refused anyway.
    assert physically_inside(link / ".." / "m.txt", layout / "root") is True


def test_missing_component_then_dotdot_fails_closed(layout: Path) -> None:
    assert physically_inside(layout / "outside" / "nope" / ".." / "m.txt", layout / "root")
    assert not physically_inside(layout / "outside" / "m.txt", layout / "root")


@pytest.fixture
def bind_mount(layout: Path) -> Iterator[Path]:
    mountpoint = layout / "outside" / "bound"
    mountpoint.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) on this host; the bind-mount alias case cannot be built")
    proc = subprocess.run(
        ["mount", "--bind", str(layout / "root"), str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(
            "mount --bind is not permitted here (" + proc.stderr.strip()[:200] + "); "
            "only the bind-mount alias case is skipped"
        )
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)


def test_inside_through_bind_mount_alias(layout: Path, bind_mount: Path) -> None:
    assert (bind_mount / "sub" / "f.txt").read_text() == "x"
    assert physically_inside(bind_mount / "m.txt", layout / "root") is True
    assert physically_inside(bind_mount / "sub" / "m.txt", layout / "root") is True


def test_outside_bind_mount_twin(layout: Path, bind_mount: Path) -> None:
    assert physically_inside(bind_mount.parent / "m.txt", layout / "root") is False


def test_existing_final_symlink_is_judged_where_it_lives(layout: Path) -> None:
    alias = layout / "outside" / "alias"
    alias.symlink_to(layout / "root")
    (layout / "root" / "out-link").symlink_to(layout / "outside")
    # The entry out-link lives in root even though it points outside.
    assert physically_inside(alias / "out-link", layout / "root") is True
    # Twin: a symlink living outside that points outside.
    (layout / "outside" / "out-link2").symlink_to(layout / "rootish")
    assert physically_inside(layout / "outside" / "out-link2", layout / "root") is False
    # The parent of the folder, reached with '..', is outside.
    assert physically_inside(layout / "root" / "..", layout / "root") is False
