"""A snapshot's one walk (issue 25, "Speed") answers exactly as the two passes it replaced.

:func:`factory.gitio.snapshot.snapshot` used to ``lstat``/read every listed path one by one
and then walk the worktree's folders for FIFOs, sockets and devices. Now one walk
(:func:`factory.gitio.rawfs.read_worktree`) does both. Over generated worktrees — nested
folders, executables, symlinks, FIFOs, an untracked nested repository, a gitlink, an
ignored folder holding tracked and untracked files and FIFOs, deleted tracked files, a
file replaced by a folder, a folder replaced by a symlink — the snapshot (with and without
the ignored folders given, with a stat cache from before) equals the one the former
composition gives (:func:`tests.support.former.two_passes`), and so does admission's
:func:`factory.gitio.gitdata.special_files`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import factory.gitio.snapshot as snap_mod
from factory.gitio import gitdata
from factory.gitio.rawfs import RawEntry, RawReader, StatCache
from factory.gitio.snapshot import Snapshot, snapshot
from tests.support.former import old_special_walk, two_passes
from tests.support.git import git, init_repo

FOLDERS = ["", "a", "a/b", "a/b/c", "d", "ign", "ign/x"]
NAMES = ["f1", "f2", "g.txt"]
FILES = [f"{d}/{n}" if d else n for d in FOLDERS for n in NAMES]
KINDS = ["text", "exec", "symlink"]
EDITS = [
    "modify",
    "chmod",
    "delete",
    "to-folder",
    "to-fifo",
    "to-symlink",
    "untracked",
    "untracked-fifo",
    "ignored-fifo",
    "nested-repo",
    "init-in-folder",
    "folder-to-symlink",
    "delete-folder",
]


def outcome(make: Callable[[], Snapshot]) -> tuple[object, ...]:
    """What a snapshot call gives, comparable: its fields (the cache's entries, not when it
    began) or its error's type and text."""
    try:
        s = make()
    except Exception as error:  # the same error either way is the point
        return ("error", type(error).__name__, str(error))
    fields = (s.base_tree, s.tree, s.changes, s.problems, s.paths, s.hidden, s.patch)
    return ("ok", *fields, s.cache.entries)


def _pair(
    call: Callable[[StatCache | None], Snapshot],
    entries: dict[bytes, RawEntry] | None,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The outcomes of ``call`` now and as before, each given a stat cache of ``entries``
    dated long after the files were written (so its unchanged files are not read)."""

    def aged() -> StatCache | None:
        return None if entries is None else StatCache(dict(entries), 1 << 62)

    new = outcome(lambda: call(aged()))
    with monkeypatch.context() as m:
        m.setattr(snap_mod, "read_worktree", two_passes)
        old = outcome(lambda: call(aged()))
    return new, old


def _write(path: Path, kind: str, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        path.symlink_to("../" + text if "/" in text else text)
    else:
        path.write_text(text)
        path.chmod(0o755 if kind == "exec" else 0o644)


def _replace(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _edit(root: Path, edit: str, rel: str) -> None:
    path, folder = root / rel, (root / rel).parent
    if edit == "modify" and path.is_file() and not path.is_symlink():
        path.write_text("changed\n")
    elif edit == "chmod" and path.is_file() and not path.is_symlink():
        path.chmod(path.stat().st_mode ^ 0o100)
    elif edit in ("delete", "to-folder", "to-fifo", "to-symlink"):
        _replace(path)
        folder.mkdir(parents=True, exist_ok=True)
        if edit == "to-folder":
            path.mkdir()
            (path / "inner").write_text("inner\n")
        elif edit == "to-fifo":
            os.mkfifo(path)
        elif edit == "to-symlink":
            path.symlink_to("elsewhere")
    elif edit == "untracked" and not os.path.lexists(path):
        _write(path, "text", "new\n")
    elif edit in ("untracked-fifo", "ignored-fifo"):
        folder.mkdir(parents=True, exist_ok=True)
        name = "p.log" if edit == "ignored-fifo" else "pipe"
        if not os.path.lexists(folder / name):
            os.mkfifo(folder / name)
    elif edit == "nested-repo" and not os.path.lexists(folder / "nest"):
        nest = init_repo(folder / "nest", {"n.txt": "n\n"})
        os.mkfifo(nest / "pipe")  # inside a nested repository: not the worktree's
    elif edit == "init-in-folder" and folder != root and folder.is_dir():
        git(folder, "init", "-q")
    elif edit == "folder-to-symlink" and folder != root:
        _replace(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.symlink_to(".")  # tracked paths below it now lie below a symlink
    elif edit == "delete-folder" and folder != root:
        _replace(folder)


def _repo(top: Path, files: dict[str, str], with_gitlink: bool) -> Path:
    root = init_repo(top / "r", {".gitignore": "ign/\n*.log\n"})
    for i, (rel, kind) in enumerate(sorted(files.items())):
        _write(root / rel, kind, f"{i}\n" if kind != "symlink" else "f1")
    (root / "ign" / "untracked.txt").parent.mkdir(exist_ok=True)
    (root / "ign" / "untracked.txt").write_text("ignored\n")
    os.mkfifo(root / "ign" / "pipe")
    if with_gitlink:
        init_repo(root / "sub", {"s.txt": "s\n"})
    git(root, "add", "-A")
    forced = [rel for rel in files if rel.startswith("ign/")]
    if forced:
        git(root, "add", "-f", "--", *forced)
    git(root, "commit", "-q", "-m", "base")
    return root


def _compare(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = git(root, "rev-parse", "HEAD^{tree}").strip()
    _, ignored = gitdata.status_and_ignored(root)
    calls: list[Callable[[StatCache | None], Snapshot]] = [
        lambda c: snapshot(root, base, cache=c),
        lambda c: snapshot(root, base, cache=c, ignored_folders=ignored),
    ]
    for call in calls:
        new, old = _pair(call, None, monkeypatch)
        assert new == old
        if new[0] == "ok":
            entries = new[-1]
            assert isinstance(entries, dict)
            assert _pair(call, entries, monkeypatch)[0] == _pair(call, entries, monkeypatch)[1]
    former = gitdata.not_ignored(root, old_special_walk(root, ignored))
    assert gitdata.special_files(root, ignored) == former
    assert gitdata.special_files(root) == former


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.dictionaries(st.sampled_from(FILES), st.sampled_from(KINDS), min_size=1, max_size=8),
    with_gitlink=st.booleans(),
    edits=st.lists(st.tuples(st.sampled_from(EDITS), st.sampled_from(FILES)), max_size=8),
)
def test_the_one_walk_snapshot_equals_the_two_pass_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    with_gitlink: bool,
    edits: list[tuple[str, str]],
) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as top:
        root = _repo(Path(top), files, with_gitlink)
        for edit, rel in edits:
            _edit(root, edit, rel)
        _compare(root, monkeypatch)


def test_paths_the_walk_meets_are_not_read_again(tmp_path: Path) -> None:
    """The fold is real: after the walk, a listed path it met is answered from it (here
    the file is gone from disk, yet the walk's entry stands), one it never met is read."""
    root = init_repo(tmp_path / "r", {"a/f.txt": "f\n"})
    reader = RawReader(root)
    assert reader.walk([b"a/f.txt", b"a/gone.txt"], set()) == []
    (root / "a" / "f.txt").unlink()
    assert reader.read(b"a/f.txt").kind == "file"
    assert reader.read(b"a/gone.txt").kind == "missing"
