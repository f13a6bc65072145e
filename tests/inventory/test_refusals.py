"""Every refusal of ``factory digest`` (exit 2, named, nothing written) and its twin (F-6)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from factory.cli.digest_cmd import EMPTY_PATH
from tests.support.cli import run_factory
from tests.support.inventory_ref import reference_digest, write


def _digest_argv(root: Path, manifest: Path, prefix: tuple[str, ...]) -> list[str]:
    tail = ["--root", str(root), "--manifest", str(manifest)]
    return [*prefix, sys.executable, "-m", "factory", "digest", *tail]


def refused(
    root: Path,
    manifest: Path,
    code: str,
    shows: str | bytes,
    *,
    argv_prefix: tuple[str, ...] = (),
) -> None:
    proc = subprocess.run(
        _digest_argv(root, manifest, argv_prefix),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr.startswith(f"factory: {code}: ".encode()), proc.stderr
    assert proc.stderr.count(b"\n") == 1
    shown = shows.encode() if isinstance(shows, str) else shows
    assert shown in proc.stderr
    assert not os.path.lexists(manifest), "a refused tree must leave no manifest"


def succeeds(root: Path, manifest: Path, *, argv_prefix: tuple[str, ...] = ()) -> None:
    proc = subprocess.run(
        _digest_argv(root, manifest, argv_prefix),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().endswith(f" {reference_digest(root)}\n")
    assert manifest.is_file()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    write(root, "ok.txt", "fine\n")
    write(root, "sub/inner.txt", "inner\n")
    return root


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path / "out" / "manifest.txt"


# Each maker puts one offending entry at sub/<name> and returns the name shown.
def _symlink_file(p: Path) -> None:
    p.symlink_to(p.parent / "inner.txt")


def _symlink_dir(p: Path) -> None:
    p.symlink_to(p.parent.parent)


def _symlink_dangling(p: Path) -> None:
    p.symlink_to(p.parent / "nowhere")


def _symlink_loop(p: Path) -> None:
    (p.parent / "loop-b").symlink_to(p)  # reported second: "sub/entry" sorts first
    p.symlink_to(p.parent / "loop-b")


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _device(p: Path) -> None:
    os.mknod(p, 0o600 | 0o020000, os.makedev(1, 3))  # a char device like /dev/null


MAKERS: dict[str, tuple[Callable[[Path], None], str]] = {
    "symlink-to-file": (_symlink_file, "symlink-refused"),
    "symlink-to-folder": (_symlink_dir, "symlink-refused"),
    "symlink-dangling": (_symlink_dangling, "symlink-refused"),
    "symlink-loop": (_symlink_loop, "symlink-refused"),
    "fifo": (_fifo, "fifo-refused"),
    "device": (_device, "device-refused"),
}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_non_regular_entry_refused(tree: Path, manifest: Path, kind: str) -> None:
    make, code = MAKERS[kind]
    make(tree / "sub" / "entry")
    # A FIFO with no writer would block an open() forever; the subprocess timeout in
    # refused() turns a hang into a failure instead of a stuck suite.
    refused(tree, manifest, code, "sub/entry")


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_non_regular_entry_twin_regular_file_succeeds(
    tree: Path, manifest: Path, kind: str
) -> None:
    make, _ = MAKERS[kind]
    make(tree / "sub" / "entry")
    for p in (tree / "sub" / "entry", tree / "sub" / "loop-b"):
        if os.path.lexists(p):
            p.unlink()
    write(tree, "sub/entry", "a regular file in its place\n")
    succeeds(tree, manifest)


def test_socket_refused_and_twin(tree: Path, manifest: Path) -> None:
    path = tree / "sub" / "s"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        refused(tree, manifest, "socket-refused", "sub/s")
    finally:
        sock.close()
    path.unlink()
    write(tree, "sub/s", "")
    succeeds(tree, manifest)


def test_symlink_at_top_level_and_inside_excluded_folder(tree: Path, manifest: Path) -> None:
    # A symlink inside .git is never visited (the folder is skipped whole)...
    write(tree, ".git/HEAD", "ref: refs/heads/main\n")
    (tree / ".git" / "link").symlink_to(tree / "ok.txt")
    succeeds(tree, manifest)
    manifest.unlink()
    # ...but a symlink NAMED node_modules is not a folder named node_modules: refused.
    (tree / "node_modules").symlink_to(tree / "sub")
    refused(tree, manifest, "symlink-refused", "node_modules")


class _OpenWatch:
    """inotify watch of one path for IN_OPEN (Linux), through libc via ctypes."""

    IN_OPEN = 0x20
    IN_NONBLOCK = 0o4000

    def __init__(self, path: Path) -> None:
        import ctypes

        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(self.IN_NONBLOCK)
        assert self.fd >= 0
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), self.IN_OPEN)
        assert wd >= 0

    def opened(self) -> bool:
        try:
            return bool(os.read(self.fd, 4096))
        except BlockingIOError:
            return False

    def close(self) -> None:
        os.close(self.fd)


def test_fifo_refused_without_being_opened(tree: Path, manifest: Path) -> None:
    fifo = tree / "pipe"
    os.mkfifo(fifo)
    watch = _OpenWatch(fifo)
    try:
        refused(tree, manifest, "fifo-refused", "pipe")
        assert not watch.opened(), "the digest opened the FIFO"
        # Control: the watch does see an open (O_RDWR on a FIFO never blocks on Linux).
        os.close(os.open(fifo, os.O_RDWR))
        assert watch.opened()
    finally:
        watch.close()


def test_name_not_utf8_refused_and_twin(tree: Path, manifest: Path) -> None:
    bad = os.fsencode(tree / "sub") + b"/caf\xe9.txt"
    with open(bad, "wb") as fh:
        fh.write(b"latin-1 name")
    refused(tree, manifest, "name-not-utf8", b"sub/caf\\xe9.txt")
    os.unlink(bad)
    write(tree, "sub/café.txt", "latin-1 name")
    succeeds(tree, manifest)


def test_folder_name_not_utf8_refused(tree: Path, manifest: Path) -> None:
    bad = os.fsencode(tree) + b"/dir\xff"
    os.mkdir(bad)
    refused(tree, manifest, "name-not-utf8", b"dir\\xff")
    os.rmdir(bad)
    (tree / "dir\u00ff").mkdir()
    succeeds(tree, manifest)


@pytest.mark.parametrize("rel", ["sub/line\nbreak.txt", "fol\nder/x.txt"])
def test_name_with_lf_refused_and_twin(tree: Path, manifest: Path, rel: str) -> None:
    write(tree, rel, "x")
    refused(tree, manifest, "name-contains-lf", "line\\nbreak" if "line" in rel else "fol\\nder")
    shutil.rmtree(tree / rel.split("/")[0]) if rel.startswith("fol") else (tree / rel).unlink()
    write(tree, rel.replace("\n", " "), "x")
    succeeds(tree, manifest)


def test_name_with_cr_or_tab_is_fine(tree: Path, manifest: Path) -> None:
    write(tree, "sub/cr\rtab\t.txt", "x")
    succeeds(tree, manifest)


# Root keeps DAC permissions from mattering; dropping CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH from the child makes chmod 000 bite for uid 0 as for anyone.
NO_DAC = (
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
)


@pytest.fixture
def without_dac() -> Iterator[tuple[str, ...]]:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to drop root's DAC override")
    yield NO_DAC


def test_unreadable_file_refused_and_twin(
    tree: Path, manifest: Path, without_dac: tuple[str, ...]
) -> None:
    secret = write(tree, "sub/secret.txt", "no peeking")
    secret.chmod(0)
    refused(tree, manifest, "unreadable", "sub/secret.txt", argv_prefix=without_dac)
    secret.chmod(0o644)
    succeeds(tree, manifest, argv_prefix=without_dac)


def test_unreadable_folder_refused_and_twin(
    tree: Path, manifest: Path, without_dac: tuple[str, ...]
) -> None:
    locked = tree / "locked"
    write(tree, "locked/x.txt", "x")
    locked.chmod(0)
    try:
        refused(tree, manifest, "unreadable", "locked", argv_prefix=without_dac)
    finally:
        locked.chmod(0o755)
    succeeds(tree, manifest, argv_prefix=without_dac)


def test_root_not_a_folder_refused_and_twin(tmp_path: Path, manifest: Path) -> None:
    file_root = write(tmp_path, "plain.txt", "x")
    refused(file_root, manifest, "root-not-folder", "plain.txt")
    refused(tmp_path / "missing", manifest, "root-not-folder", "missing")
    fifo_root = tmp_path / "fifo-root"
    os.mkfifo(fifo_root)
    refused(fifo_root, manifest, "root-not-folder", "fifo-root")
    folder = tmp_path / "folder"
    write(folder, "plain.txt", "x")
    succeeds(folder, manifest)


def test_empty_root_or_manifest_refused_and_twin(tree: Path, manifest: Path) -> None:
    # An empty --root (an unset shell variable) once measured the current folder silently.
    def digest(*argv: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "factory", "digest", *argv],
            cwd=tree,
            capture_output=True,
            timeout=60,
            check=False,
        )

    for argv, flag in ((["--root", ""], "--root"), (["--manifest", ""], "--manifest")):
        proc = digest(*argv)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == b""
        assert (
            proc.stderr
            == f"factory: empty-path: {flag} is empty; {EMPTY_PATH.next_step}\n".encode()
        )
    twin = digest("--root", ".", "--manifest", str(manifest))
    assert twin.returncode == 0, twin.stderr
    assert twin.stdout.decode().endswith(f" {reference_digest(tree)}\n")
    assert manifest.is_file()


def test_manifest_inside_root_directly(tree: Path, manifest: Path) -> None:
    refused(tree, tree / "manifest.txt", "manifest-inside-root", "manifest.txt")
    refused(tree, tree / "new" / "dir" / "m.txt", "manifest-inside-root", "m.txt")
    refused(tree, tree / ".git" / "m.txt", "manifest-inside-root", "m.txt")
    succeeds(tree, manifest)


def test_manifest_inside_root_through_symlinked_alias(tmp_path: Path, tree: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tree)
    refused(tree, alias / "m.txt", "manifest-inside-root", "m.txt")
    # ...and the root named through the alias, manifest named directly.
    refused(alias, tree / "sub" / "m.txt", "manifest-inside-root", "m.txt")
    # Twin: an alias of a sibling folder is outside.
    (tmp_path / "sibling").mkdir()
    other = tmp_path / "other-alias"
    other.symlink_to(tmp_path / "sibling")
    succeeds(tree, other / "m.txt")


def test_manifest_inside_root_through_dotdot(tmp_path: Path, tree: Path) -> None:
    (tmp_path / "outside").mkdir()
    refused(tree, tmp_path / "outside" / ".." / "tree" / "m.txt", "manifest-inside-root", "m")
    refused(tree, tree / "sub" / ".." / "m.txt", "manifest-inside-root", "m.txt")
    # Lexically outside/m.txt, physically tree/m.txt: the symlink is followed before '..'.
    (tmp_path / "outside" / "link").symlink_to(tree / "sub")
    refused(tree, tmp_path / "outside" / "link" / ".." / "m.txt", "manifest-inside-root", "m")
    # Twin: '..' that really leaves the root.
    succeeds(tree, tree / ".." / "outside" / "m.txt")
    assert (tmp_path / "outside" / "m.txt").is_file()


def test_manifest_refusal_runs_before_reading_the_tree(tree: Path) -> None:
    # Both problems present: the manifest one is reported (checked first, before reading).
    os.mkfifo(tree / "pipe")
    refused(tree, tree / "m.txt", "manifest-inside-root", "m.txt")


def test_interpreter_runs_without_dac_override() -> None:
    # Guard for the no-DAC tests: their refusals must come from the tree, not from an
    # interpreter that cannot start without DAC override.
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv missing")
    proc = subprocess.run(
        [*NO_DAC, sys.executable, "-c", "import factory; print('ok')"],
        capture_output=True,
        timeout=60,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    assert proc.stdout == b"ok\n", proc.stderr


def test_refusal_message_names_what_to_do(tree: Path, manifest: Path) -> None:
    (tree / "link").symlink_to(tree / "ok.txt")
    proc = run_factory(["digest", "--root", str(tree)])
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert message.startswith("factory: symlink-refused: link: ")
    assert "regular files only" in message


def test_manifest_parent_not_a_folder_refused_and_twin(tmp_path: Path, tree: Path) -> None:
    blocker = write(tmp_path, "blocker", "a file, not a folder")
    refused(tree, blocker / "m.txt", "manifest-parent-not-folder", "blocker")
    refused(tree, blocker / "deeper" / "m.txt", "manifest-parent-not-folder", "blocker")
    assert blocker.read_text() == "a file, not a folder"
    (tmp_path / "a-folder").mkdir()
    succeeds(tree, tmp_path / "a-folder" / "m.txt")


def test_manifest_folder_missing_refused_and_nothing_created(tmp_path: Path, tree: Path) -> None:
    # A mistyped --manifest once created every missing folder on its path after hashing.
    refused(tree, tmp_path / "new-folder" / "m.txt", "manifest-folder-missing", "new-folder")
    refused(tree, tmp_path / "new" / "deeper" / "m.txt", "manifest-folder-missing", "deeper")
    assert not (tmp_path / "new-folder").exists()
    assert not (tmp_path / "new").exists()
    # Twin: once the folder exists the same path is written.
    (tmp_path / "new-folder").mkdir()
    succeeds(tree, tmp_path / "new-folder" / "m.txt")


def test_manifest_write_failure_is_exit_4_after_digest(
    tmp_path: Path, tree: Path, without_dac: tuple[str, ...]
) -> None:
    locked = tmp_path / "locked-out"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    proc = subprocess.run(
        _digest_argv(tree, locked / "m.txt", without_dac),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr.startswith(b"factory: manifest-write-failed: ")
    assert reference_digest(tree).encode() in proc.stderr  # the digest is still reported
    assert list(locked.iterdir()) == []
    locked.chmod(0o755)
    succeeds(tree, locked / "m.txt", argv_prefix=without_dac)


@pytest.mark.parametrize(
    ("name", "code"), [(b"r\xffoot", "name-not-utf8"), (b"r\noot", "name-contains-lf")]
)
def test_root_path_the_output_cannot_carry_is_refused(
    tmp_path: Path, manifest: Path, name: bytes, code: str
) -> None:
    odd = os.fsencode(tmp_path) + b"/" + name
    os.mkdir(odd)
    with open(odd + b"/f.txt", "wb") as fh:
        fh.write(b"x")
    proc = subprocess.run(
        [sys.executable, "-m", "factory", "digest", "--root", odd, "--manifest", str(manifest)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.startswith(f"factory: {code}: ".encode())
    assert not manifest.exists()
    # Twin: the same tree under a printable name.
    os.rename(odd, tmp_path / "root")
    succeeds(tmp_path / "root", manifest)


def test_manifest_inside_root_through_bind_mount(tmp_path: Path, tree: Path) -> None:
    mountpoint = tmp_path / "bound"
    mountpoint.mkdir()
    proc = subprocess.run(
        ["mount", "--bind", str(tree), str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip("mount --bind is not permitted here: " + proc.stderr.strip()[:200])
    try:
        assert (mountpoint / "ok.txt").read_text() == "fine\n"
        refused(tree, mountpoint / "m.txt", "manifest-inside-root", "m.txt")
        refused(tree, mountpoint / "sub" / "new" / "m.txt", "manifest-inside-root", "m.txt")
        # Twin: beside the mount point is outside.
        succeeds(tree, tmp_path / "beside-bound.txt")
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)
