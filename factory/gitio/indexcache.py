"""A stat cache for the raw snapshot, taken from git's own index (large checkouts).

:func:`factory.gitio.snapshot.snapshot` reads every path's bytes unless a
:class:`~factory.gitio.rawfs.StatCache` vouches for them. On a first snapshot there is no
earlier read, so a 50,000-file checkout is read in full. git's index already records, for
each tracked path, the blob id of its content and the ``lstat`` data of the file when
that content was hashed; :func:`index_stat_cache` turns those records into a cache the
reader can trust under git's own racy-clean rule — identical device, inode, size, mode,
mtime and ctime, and a ctime strictly before the index file was written (a file changed in
the same timestamp tick as the write is read again) — and only where the index blob *is*
the raw bytes:

* ``core.autocrlf`` true or input converts text on ``git add``: no entry is trusted;
  (this and the next rule are :func:`factory.gitio.attributes.index_converting`, the one
  predicate the gates' fast candidate uses too);
* when any attributes file may apply (a ``.gitattributes`` in the index or untracked,
  ``info/attributes``, ``core.attributesFile`` or the global and system files), an entry
  with ``text``, ``crlf``, ``eol``, ``filter``, ``ident`` or ``working-tree-encoding`` set
  is not trusted (``git check-attr``; no program runs);
* only stage-0 regular files with no flag set (not assume-unchanged, not skip-worktree);
* an entry whose blob differs from the base tree's (a staged change) is not trusted, so a
  cached entry never becomes a reported change without its SHA-256 (the cache carries none).

Anything not trusted is simply read, as without a cache. Reading the index runs no
program (``git ls-files --debug``, ``diff-index --cached``, ``check-attr``).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from factory.gitio.attributes import autocrlf_converts, git_path, index_converting
from factory.gitio.config import read_config
from factory.gitio.rawfs import RACY_MARGIN_NS, RawEntry, StatCache
from factory.gitio.run import run_git

_ENTRY = re.compile(
    rb"(100644|100755) ([0-9a-f]+) 0\t([^\0]*)\0"
    rb"  ctime: (\d+):(\d+)\n  mtime: (\d+):(\d+)\n  dev: (\d+)\tino: (\d+)\n"
    rb"  uid: \d+\tgid: \d+\n  size: (\d+)\tflags: 0\n"
)


def _staged(root: Path, base_tree: str) -> set[bytes]:
    out = run_git(
        root,
        ["diff-index", "--cached", "--no-renames", "-z", "--name-only", base_tree, "--"],
        what="git diff-index",
    )
    return {p for p in out.split(b"\0") if p}


def _untracked_attribute_files(root: Path) -> list[bytes]:
    """Untracked ``.gitattributes`` files, ignored ones included: git reads them from the
    worktree all the same, so :func:`index_converting` must see them."""
    out = run_git(
        root,
        ["ls-files", "-z", "--others", "--", ":(glob)**/.gitattributes"],
        what="git ls-files --others",
    )
    return [p for p in out.split(b"\0") if p]


def index_stat_cache(root: Path, base_tree: str) -> StatCache:
    """The trusted index entries of the checkout at ``root`` as a stat cache (see the
    module docstring); empty when nothing can be trusted."""
    cfg = read_config(root)
    if autocrlf_converts(cfg):  # nothing can be trusted: skip reading the index
        return StatCache()
    index = git_path(root, "index")
    try:
        index_ns = os.stat(index).st_mtime_ns
    except FileNotFoundError:
        return StatCache()
    out = run_git(root, ["ls-files", "-s", "--debug", "-z"], what="git ls-files --debug")
    rows = [m.groups() for m in _ENTRY.finditer(out)]
    paths = [r[2] for r in rows]
    converting = index_converting(root, cfg, paths + _untracked_attribute_files(root))
    if converting is None:
        return StatCache()
    skip = _staged(root, base_tree) | converting
    entries: dict[bytes, RawEntry] = {}
    for mode, oid, path, cs, cn, ms, mn, dev, ino, size in rows:
        if path in skip:
            continue
        st_mode = stat.S_IFREG | (0o755 if mode == b"100755" else 0o644)
        mtime = int(ms) * 1_000_000_000 + int(mn)
        ctime = int(cs) * 1_000_000_000 + int(cn)
        stamp = (int(dev), int(ino), int(size), st_mode, mtime, ctime)
        entries[path] = RawEntry("file", mode.decode(), oid.decode(), int(size), "", stamp)
    # The reader trusts a cached entry whose ctime is before started_ns - RACY_MARGIN_NS:
    # that is, before the index was written.
    return StatCache(entries=entries, started_ns=index_ns + RACY_MARGIN_NS)
