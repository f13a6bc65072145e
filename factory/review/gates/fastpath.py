"""The checkout's candidate tree through git's own index, for gates that run on every
commit — used only where it provably equals the raw-bytes snapshot, else None.

:func:`factory.gitio.snapshot.snapshot` reads every path in Python (a 10,000-file
checkout costs hundreds of milliseconds); ``git status`` compares the same paths against
the index's stat data in C. The two give the same tree exactly when git stores raw bytes
and sees every change the raw snapshot would, so this path is taken only if:

* no conversion can apply: ``core.autocrlf`` off, ``core.fileMode`` and ``core.symlinks``
  not false, and no path with a ``text``/``eol``/``crlf``/``filter``/``ident``/
  ``working-tree-encoding`` attribute (``git check-attr``, only when an attributes file may
  apply); configured filter drivers are switched off in git's environment either way;
* no staged deletion (the raw snapshot keeps a base path bound even when an ignore rule
  now hides it from ``git status``);
* every index entry is a plain stage-0 entry (no assume-unchanged, skip-worktree, unmerged
  or intent-to-add flag);
* every changed or untracked path is a regular file (no symlink, submodule, nested
  repository, special file) — ``git status --porcelain=v2 -z -uall`` (no fsmonitor, no
  optional locks, no renames) says which paths changed.

Then the candidate is a private copy of the index with each changed file's raw bytes
(``hash-object -w --no-filters``), each deleted file removed and each untracked file added,
written with ``write-tree``. Anything else returns None and the caller takes the raw
snapshot. A test checks that both give the same tree on the states this path accepts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from factory.documents.canonical import sha256_hex
from factory.gitio.attributes import FALSE_WORDS, index_converting, outside_attribute_files
from factory.gitio.config import RepoConfig, read_config
from factory.gitio.run import run_git
from factory.gitio.worktree import Worktree
from factory.review.gates import gitfacts

ZERO = "0" * 40


def _no_conversions(wt: Worktree, cfg: RepoConfig, paths: list[bytes]) -> bool:
    s = cfg.settings()
    if (s.get("filemode") or "true").lower() in FALSE_WORDS:
        return False
    if (s.get("symlinks") or "true").lower() in FALSE_WORDS:
        return False
    return index_converting(wt.root, cfg, paths) == set()


def _plain_index(wt: Worktree) -> list[bytes] | None:
    """Every index path, or None when an entry is flagged (``ls-files -v`` tag not H)."""
    out = run_git(wt.root, ["ls-files", "-v", "-z"], what="git ls-files -v")
    paths = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        if not rec.startswith(b"H "):
            return None
        paths.append(rec[2:])
    return paths


def _regular(root: Path, path: bytes) -> str | None:
    """The raw mode of a regular file at ``path`` (None for anything else)."""
    try:
        st = os.lstat(os.path.join(os.fsencode(root), path))
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return "100755" if st.st_mode & 0o100 else "100644"


def _status(wt: Worktree, cfg: RepoConfig) -> bytes:
    return run_git(
        wt.root,
        ["status", "--porcelain=v2", "-z", "-uall", "--ignored=no", "--no-renames"],
        env_extra=cfg.no_filters_env(),
        what="git status",
    )


def _changes(out: bytes) -> tuple[list[bytes], list[bytes]] | None:
    """(paths whose raw bytes must be hashed, paths removed), or None to fall back."""
    fields, i = out.split(b"\0"), 0
    hashed, removed = [], []
    while i < len(fields):
        rec, i = fields[i], i + 1
        if not rec:
            continue
        kind = rec[:2]
        if kind == b"? ":
            path = rec[2:]
            if path.endswith(b"/"):
                return None  # a nested repository or an unreadable folder
            hashed.append(path)
            continue
        if kind != b"1 ":
            return None  # unmerged, renamed or anything unexpected
        parts = rec.split(b" ", 8)
        xy, sub, mode_w, path = parts[1], parts[2], parts[5], parts[8]
        if (
            sub != b"N..."
            or xy[0:1] == b"D"  # a staged deletion may leave an ignored file bound by the base
            or xy[1:2] in (b"A", b"T")
            or mode_w in (b"120000", b"160000")
        ):
            return None
        if mode_w == b"000000":
            removed.append(path)
        elif xy[1:2] != b".":
            hashed.append(path)
    return hashed, removed


@dataclass(frozen=True)
class FastCandidate:
    """A candidate tree, its changed paths, and what it was derived from (the witness a
    re-derivation compares instead of writing the tree again: a digest of the effective
    configuration, the index bytes and the ``git status`` output)."""

    tree: str
    paths: tuple[str, ...]
    base_tree: str
    witness: str
    hashed: tuple[bytes, ...]
    oids: tuple[str, ...]
    modes: tuple[str, ...]  # the raw mode of each hashed path


def _outside_attributes(wt: Worktree, cfg: RepoConfig) -> list[bytes]:
    """Each attributes file git reads from outside the worktree: its name and bytes (a
    change there is invisible to ``git status`` but may change what the index means)."""
    info = os.path.join(wt.common_dir, "info", "attributes")
    out = []
    for name in outside_attribute_files(info, cfg.last("core.attributesfile")):
        try:
            with open(name, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b"-"
        except OSError as exc:
            data = f"unreadable {exc.errno}".encode()
        out += [os.fsencode(name), data]
    return out


def witness_of(wt: Worktree, cfg: RepoConfig, index: str | None, status: bytes) -> str:
    """The digest of what a fast candidate was derived from: the effective configuration,
    the attributes files outside the worktree, the index bytes' digest and the ``git
    status`` output (each part length-prefixed)."""
    h = hashlib.sha256(b"factory.review-gate-witness/1\0")
    for key, value in cfg.entries:
        for part in (key, value):
            raw = b"\xff" if part is None else part.encode("utf-8", "surrogateescape")
            h.update(len(raw).to_bytes(8, "big") + raw)
    for raw in (*_outside_attributes(wt, cfg), (index or "-").encode(), status):
        h.update(len(raw).to_bytes(8, "big") + raw)
    return h.hexdigest()


def _index_digest(wt: Worktree) -> str | None:
    try:
        return sha256_hex((wt.git_dir / "index").read_bytes())
    except FileNotFoundError:
        return None


def _hash(wt: Worktree, hashed: list[bytes], write: bool) -> list[str]:
    if not hashed:
        return []
    out = run_git(
        wt.root,
        ["hash-object", *(["-w"] if write else []), "--no-filters", "--stdin-paths"],
        stdin=b"".join(p + b"\n" for p in hashed),
        what="git hash-object",
    )
    return out.decode("ascii").split()


def _unchanged(wt: Worktree, previous: FastCandidate, witness: str, base_tree: str) -> bool:
    """Whether ``previous`` is still the candidate: the same witness and base, and each
    hashed path still a regular file of the same mode and bytes (``git status`` shows an
    untracked file by name only, so a mode change there is seen here)."""
    if (previous.witness, previous.base_tree) != (witness, base_tree):
        return False
    if tuple(_regular(wt.root, p) for p in previous.hashed) != previous.modes:
        return False
    return tuple(_hash(wt, list(previous.hashed), write=False)) == previous.oids


def fast_candidate(
    wt: Worktree, base_tree: str, previous: FastCandidate | None = None
) -> FastCandidate | None:
    """The candidate through the index, or None (use the raw snapshot). With ``previous``
    (an earlier result), the same configuration, index bytes, ``git status`` output and
    hashes of the changed files mean the same candidate: it is returned as it is."""
    cfg = read_config(wt.root)
    index = _index_digest(wt)
    status = _status(wt, cfg)
    witness = witness_of(wt, cfg, index, status)
    if previous is not None and _unchanged(wt, previous, witness, base_tree):
        return previous
    paths = _plain_index(wt)
    found = _changes(status)
    if paths is None or found is None:
        return None
    hashed, removed = found
    if not _no_conversions(wt, cfg, sorted(set(paths) | set(hashed))):
        return None
    modes = [_regular(wt.root, p) for p in hashed]
    if any(m is None for m in modes) or any(b"\n" in p for p in hashed):
        return None
    oids = _hash(wt, hashed, write=True)
    if len(oids) != len(hashed):
        return None
    records = [f"0 {ZERO}\t".encode() + p + b"\0" for p in removed]
    records += [
        f"{m} {o}\t".encode() + p + b"\0" for m, o, p in zip(modes, oids, hashed, strict=True)
    ]
    tree = _write(wt, records)
    changed = gitfacts.changed_paths(wt.root, base_tree, tree)
    regular = tuple(m for m in modes if m is not None)
    return FastCandidate(tree, changed, base_tree, witness, tuple(hashed), tuple(oids), regular)


def _write(wt: Worktree, records: list[bytes]) -> str:
    with tempfile.TemporaryDirectory(prefix="factory-gate-cand-") as tmp:
        index = Path(tmp) / "index"
        with contextlib.suppress(FileNotFoundError):
            shutil.copyfile(wt.git_dir / "index", index)
        env = {"GIT_INDEX_FILE": str(index)}
        if records:
            run_git(
                wt.root,
                ["update-index", "-z", "--index-info"],
                env_extra=env,
                stdin=b"".join(records),
                what="git update-index",
            )
        out = run_git(wt.root, ["write-tree"], env_extra=env, what="git write-tree")
    return out.decode("ascii").strip()
