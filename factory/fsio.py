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


OUTPUT_EXISTS = OutputExists.define("output-exists", "choose a new path", default=True)


class OutputUnwritable(Refused):
    """The output path was claimed but its first record could not be written; it was
    removed again, nothing ran."""


OUTPUT_UNWRITABLE = OutputUnwritable.define(
    "output-unwritable", "free space where the output goes (or choose another path), then retry"
)


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
    _fill(path, _create(path, mode), data)


def _create(path: Path, mode: int) -> int:
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError as exc:
        raise OUTPUT_EXISTS(f"{path} already exists") from exc


def _fill(path: Path, fd: int, data: bytes) -> None:
    """Write ``data`` to the new file ``fd`` at ``path`` and make it durable; on any failure
    (a full disk, a file-size limit, an I/O error) the file is removed before the error
    propagates: a half-written exclusive file (a 0-byte receipt) is never left behind."""
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    fsync_dir(path.parent)


def reserve(path: Path, first_record: bytes, *, mode: int = 0o644) -> None:
    """Claim an output path before any effect (SPEC F-5).

    After this returns, the caller owns ``path`` and must leave a terminal record there
    on every return path (with :func:`atomic_replace`).

    Raises:
        OutputExists: someone else holds the path.
        OutputUnwritable: the claim was made but its first record could not be written
            (a full disk…): the path is free again, nothing ran (exit 2).
        OSError: the folder is missing or not writable.
    """
    fd = _create(path, mode)
    try:
        _fill(path, fd, first_record)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise OUTPUT_UNWRITABLE(f"{path} could not be written ({why}); nothing ran") from exc


def atomic_replace(
    path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True, exact_mode: bool = False
) -> None:
    """Replace ``path`` with ``data`` atomically and durably (SPEC F-5). ``durable=False``
    skips both fsyncs: for a cache, where a crash may lose the file or leave it empty but
    never leaves it half written over the old one. ``exact_mode=True`` gives the new file
    ``mode`` itself, not ``mode`` narrowed by the umask (to keep an edited file's mode)."""
    folder = path.parent
    tmp = folder / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        try:
            if exact_mode:
                os.fchmod(fd, mode)
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
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
        raise OUTPUT_EXISTS(f"{path} already exists") from exc


def nearest_existing(path: Path) -> tuple[Path, tuple[str, ...]]:
    """Split a path into its nearest existing ancestor, resolved, and the missing tail.

    Components are resolved one by one the way the kernel would: a symlink is followed
    (``os.path.realpath``) *before* a later ``..`` applies, so ``link/..`` means the parent
    of the link's target, not the folder holding the link. Nothing is normalised
    lexically. ``.`` components are dropped from the tail; ``..`` is kept there.
    """
    raw = os.fspath(path)
    if not os.path.isabs(raw):
        raw = os.path.join(os.getcwd(), raw)
    parts = [p for p in raw.split(os.sep) if p not in ("", ".")]
    current = Path(os.path.realpath(os.sep))
    for index, part in enumerate(parts):
        if part == "..":
            current = current.parent  # current is fully resolved, so this is physical
            continue
        candidate = current / part
        if not os.path.lexists(candidate):
            return current, tuple(parts[index:])
        current = Path(os.path.realpath(candidate))
    return current, ()


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _chain_reaches(start: Path, target: tuple[int, int], max_steps: int) -> bool:
    """True when ``start`` or one of its (physical) ancestors has identity ``target``."""
    current = start
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
    return True  # ran out of steps: fail closed


def physically_inside(path: Path, folder: Path, *, max_steps: int = 4096) -> bool:
    """True when ``path`` is ``folder`` or lies under it, by filesystem identity.

    Three views must all say *outside* for the answer to be ``False`` (fail closed):
    the lexical one (``normpath``), the physical one of the path with every existing
    component resolved (symlinks followed before ``..``), and the physical folder that
    holds the final entry (an existing final symlink is an entry *in* that folder). The
    physical views compare the (device, inode) of each ancestor with the folder's, so a
    symlinked or bind-mounted alias of the folder cannot dodge the check.

    Args:
        path: any path; need not exist (its nearest existing ancestor decides).
        folder: an existing folder.
        max_steps: bound on each ancestor walk; running out counts as *inside*.

    Raises:
        FactoryError: ``folder`` cannot be stat'ed.
    """
    try:
        target = _identity(os.stat(folder))
    except OSError as exc:
        raise FactoryError(f"cannot stat {folder}: {exc.strerror}") from exc
    absolute = Path(os.path.normpath(os.path.abspath(path)))
    folder_abs = Path(os.path.normpath(os.path.abspath(folder)))
    if absolute == folder_abs or folder_abs in absolute.parents:
        return True
    existing, tail = nearest_existing(path)
    if ".." in tail:
        # '..' after a missing component: the kernel could not resolve it either; refuse
        # to guess.
        return True
    if _chain_reaches(existing, target, max_steps):
        return True
    if not tail and os.path.basename(os.fspath(path).rstrip(os.sep)) not in ("", ".", ".."):
        # The final entry exists; also judge the folder that holds it, unfollowed.
        parent_raw = os.path.dirname(os.fspath(path).rstrip(os.sep)) or "."
        holder, holder_tail = nearest_existing(Path(parent_raw))
        if holder_tail or _chain_reaches(holder, target, max_steps):
            return True
    return False
