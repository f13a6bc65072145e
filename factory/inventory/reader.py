"""Open and hash the listed files of a tree, one at a time, never leaving it (SPEC F-6).

Every file is reached from one descriptor of the root: each folder on its path is opened
component by component with ``O_DIRECTORY|O_NOFOLLOW`` (a small cache per worker), so a
folder swapped for a symlink after the listing is refused, not followed out of the tree,
and the kernel never resolves a long path. The file itself is opened with
``O_NOFOLLOW|O_NONBLOCK`` and hashed by the one regular-file hasher
(:class:`factory.filehash.FileHasher`). What goes wrong becomes a :class:`Problem` with a
registered refusal code, never an exception.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import OrderedDict

from factory.filehash import OPEN_FLAGS, FileHasher
from factory.inventory import recipe as r
from factory.inventory.walk import Problem, kind_of, non_regular, shown

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_OPEN_DIRS = 64  # folder descriptors cached per worker


def _open_problem(rel: str, exc: OSError) -> Problem:
    if exc.errno == errno.ELOOP:
        return non_regular(rel, "symlink")  # O_NOFOLLOW met a symlink swapped in
    if exc.errno == errno.ENXIO:
        return non_regular(rel, "socket")  # open(2) of a socket
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Problem(
            rel,
            r.CHANGED_DURING_WALK,
            f"{shown(rel)}: vanished while the tree was measured ({exc.strerror})",
        )
    return Problem(
        rel,
        r.UNREADABLE,
        f"{shown(rel)}: file cannot be read ({exc.strerror})",
    )


class _FolderProblem(Exception):
    """A folder on a file's path could not be opened without following a symlink."""

    def __init__(self, error: OSError, folder: str, is_symlink: bool) -> None:
        super().__init__(error)
        self.error = error
        self.folder = folder
        self.is_symlink = is_symlink


def _folder_problem(rel: str, problem: _FolderProblem) -> Problem:
    if problem.is_symlink:
        return Problem(
            rel,
            r.SYMLINK_REFUSED,
            f"{shown(rel)}: its folder {shown(problem.folder)} became a symlink while the "
            "tree was measured; the recipe never follows symlinks",
        )
    if problem.error.errno == errno.ENOTDIR:
        return Problem(
            rel,
            r.CHANGED_DURING_WALK,
            f"{shown(rel)}: its folder {shown(problem.folder)} is no longer a folder",
        )
    return _open_problem(rel, problem.error)


class TreeReader:
    """Opens and hashes one file at a time (one per worker): the folder-descriptor cache
    is here, the reading and hashing is :class:`factory.filehash.FileHasher`."""

    def __init__(self, root_fd: int) -> None:
        self.hasher = FileHasher()
        self.root_fd = root_fd
        self.folders: OrderedDict[str, int] = OrderedDict()

    def close(self) -> None:
        while self.folders:
            os.close(self.folders.popitem()[1])

    def _folder(self, rel_dir: str) -> int:
        """Descriptor of ``rel_dir`` opened component by component without following."""
        if not rel_dir:
            return self.root_fd
        fd = self.folders.get(rel_dir)
        if fd is not None:
            self.folders.move_to_end(rel_dir)
            return fd
        # Climb to the nearest cached ancestor (or the root) without recursion: a tree
        # may nest deeper than Python's recursion limit (1,500 levels of "a/" fit in
        # PATH_MAX), then open downwards one component at a time.
        missing = [rel_dir]
        while True:
            parent = missing[-1].rpartition("/")[0]
            if not parent:
                parent_fd = self.root_fd
                break
            cached = self.folders.get(parent)
            if cached is not None:
                self.folders.move_to_end(parent)
                parent_fd = cached
                break
            missing.append(parent)
        for path in reversed(missing):
            name = path.rpartition("/")[2]
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
            except OSError as exc:
                # O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP): look.
                try:
                    is_link = stat.S_ISLNK(os.lstat(name, dir_fd=parent_fd).st_mode)
                except OSError:
                    is_link = False
                raise _FolderProblem(exc, path, is_link) from None
            self.folders[path] = child
            if len(self.folders) > MAX_OPEN_DIRS:
                os.close(self.folders.popitem(last=False)[1])  # never the one just opened
            parent_fd = child
        return parent_fd

    def file(self, rel: str) -> tuple[int, str] | Problem:
        folder, _, name = rel.rpartition("/")
        try:
            fd = os.open(name, OPEN_FLAGS, dir_fd=self._folder(folder))
        except _FolderProblem as problem:
            return _folder_problem(rel, problem)
        except OSError as exc:
            return _open_problem(rel, exc)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                # Listed as a file, now a folder: a folder is fine in a tree, so this is a
                # change under our feet, not a refused kind of entry.
                return Problem(
                    rel,
                    r.CHANGED_DURING_WALK,
                    f"{shown(rel)}: became a folder while the tree was measured",
                )
            if not stat.S_ISREG(st.st_mode):
                return non_regular(rel, kind_of(st.st_mode))
            return self.hasher.digest_fd(fd, st.st_size)
        except OSError as exc:
            return _open_problem(rel, exc)
        finally:
            os.close(fd)
