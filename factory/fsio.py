"""Durable writes and physical path containment (SPEC F-5, A-1, F-6).

Writes:

* :func:`reserve` claims an output path with ``O_CREAT|O_EXCL`` before any effect and
  writes a first record; a second claimant gets :class:`OutputExists` (exit 2).
* :func:`write_exclusive` creates a new file that must not exist (evidence, keys).
* :func:`atomic_replace` replaces a file's content as temp file in the same folder →
  fsync → ``rename`` → fsync of the folder, so a reader sees the old or the new bytes,
  never half of either.

Containment: :func:`physically_inside` decides whether a path (which may not exist yet)
lies inside a folder by *filesystem identity* — the (device, inode) of every physical
ancestor of the nearest existing ancestor is compared with the folder's — so a symlinked or
bind-mounted alias of the folder cannot dodge the check, and neither can ``..`` segments.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from factory.errors import FactoryError, Refused


class OutputExists(Refused):
    """The output path is already taken; nothing was written."""

    default_code = "output-exists"


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename or create inside it survives a crash."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_exclusive(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Create ``path`` (must not exist), write ``data``, fsync file and folder.

    Raises:
        OutputExists: ``path`` exists (any kind of entry, a dangling symlink included).
        OSError: the folder is missing or not writable.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError as exc:
        raise OutputExists(f"{path} already exists; choose a new path") from exc
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def reserve(path: Path, first_record: bytes, *, mode: int = 0o644) -> None:
    """Claim an output path before any effect (SPEC F-5).

    After this returns, the caller owns ``path`` and must leave a terminal record there
    on every return path (with :func:`atomic_replace`).

    Raises:
        OutputExists: someone else holds the path.
    """
    write_exclusive(path, first_record, mode=mode)


def atomic_replace(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically and durably (SPEC F-5)."""
    folder = path.parent
    tmp = folder / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def claim_dir(path: Path, *, mode: int = 0o700) -> None:
    """Claim a new folder atomically with a non-recursive ``mkdir``.

    Of two concurrent claimants exactly one succeeds.

    Raises:
        OutputExists: the folder (or any entry) already exists.
    """
    try:
        os.mkdir(path, mode)
    except FileExistsError as exc:
        raise OutputExists(f"{path} already exists; choose a new folder") from exc


def nearest_existing(path: Path) -> tuple[Path, tuple[str, ...]]:
    """Split an absolute path into its nearest existing ancestor and the missing tail.

    ``..`` and ``.`` are resolved lexically only inside the missing tail; the existing part
    is resolved by the kernel (``os.path.realpath``), following symlinks physically.
    """
    p = Path(os.path.abspath(path))
    tail: list[str] = []
    while not os.path.lexists(p):
        if p.parent == p:
            break
        tail.append(p.name)
        p = p.parent
    return Path(os.path.realpath(p)), tuple(reversed(tail))


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def physically_inside(path: Path, folder: Path, *, max_steps: int = 4096) -> bool:
    """True when ``path`` is ``folder`` or lies under it, by filesystem identity.

    Args:
        path: any path; need not exist (its nearest existing ancestor decides).
        folder: an existing folder.
        max_steps: bound on the ancestor walk; running out counts as *inside* (fail closed).

    Raises:
        FactoryError: ``folder`` cannot be stat'ed.
    """
    try:
        target = _identity(os.stat(folder))
    except OSError as exc:
        raise FactoryError(f"cannot stat {folder}: {exc.strerror}") from exc
    # Lexical check first: cheap and catches paths under a folder that is about to exist.
    absolute = Path(os.path.normpath(os.path.abspath(path)))
    folder_abs = Path(os.path.normpath(os.path.abspath(folder)))
    if absolute == folder_abs or folder_abs in absolute.parents:
        return True
    existing, tail = nearest_existing(path)
    if ".." in tail:
        # A missing component followed by '..' would be resolved by the kernel relative to
        # something that does not exist yet; refuse to guess.
        return True
    current = existing
    for _ in range(max_steps):
        try:
            if _identity(os.stat(current)) == target:
                return True
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.EACCES):
                raise
        if current.parent == current:
            return False
        current = current.parent
    return True
