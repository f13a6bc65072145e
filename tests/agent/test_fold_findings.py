"""What the break25 attack on the issue 25 folds found, now held as regression tests.

1. A symlinked index: the git directories' binding records ``git-dir/index`` as a symlink
   (its target path), not the bytes git reads through it, so its record stayed equal while
   the worker rewrote the target, and the run reused a stale read of the entries: a file
   staged that way was in no tree, patch or changed-file list. An index file that is not a
   regular file now vouches for nothing (:func:`factory.agent.control.own_index_records`):
   the entries are read again at every check, the staging is a git mutation, and the
   reviewer's assume-unchanged bit set through the link is seen. The twin: a symlinked
   index with a worker that only edits files runs as usual.
2. Not from the folds (the same before them): a submodule's plain ``git status``
   (:func:`factory.gitio.gitdata.repo_dirty`) answered from an untracked cache the worker
   built in the submodule's index (which no binding holds); with ctime not trusted
   (``core.trustctime=false`` here, ``core.checkStat=minimal`` likewise) a file added in a
   submodule folder whose mtime was put back went unseen. factory's git runs with
   ``core.untrackedCache=false`` now, so git reads the folders. The twin: the same file
   added without the cache trick is refused the same way.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import trio

from tests.agent.fakes import Step, write
from tests.agent.helpers import run
from tests.support.git import add_linked_worktree, git, init_repo
from tests.support.layout import Layout


def _symlinked_index(layout: Layout, tmp_path: Path) -> Path:
    """Move the worktree's index out of its git directory and link it back; the target."""
    wt = layout.wt
    index = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    target = tmp_path / "elsewhere" / "index"
    target.parent.mkdir()
    os.replace(index, target)
    index.symlink_to(target)
    return target


def test_a_file_staged_through_a_symlinked_index_is_not_lost(
    layout: Layout, tmp_path: Path
) -> None:
    target = _symlinked_index(layout, tmp_path)

    def worker(w: Path) -> None:
        write("src/app.py", "def add(a, b):\n    return a + b\n")(w)
        (w / "evil.txt").write_text("staged behind a symlinked index\n")
        env = {**os.environ, "GIT_INDEX_FILE": str(target)}
        subprocess.run(["git", "add", "evil.txt"], cwd=w, env=env, check=True)

    ran = trio.run(run, layout, [Step(effect=worker)], [Step()])
    error = ran.outcome.receipt.error
    initial = ran.outcome.receipt.candidate.initial
    files = [f.path for f in initial.body.files] if initial is not None else []
    # refused as a staging, or at least (as before the folds) the file is in the candidate
    assert (error is not None and error.code == "worker-git-mutation") or "evil.txt" in files


def test_a_hide_bit_set_through_a_symlinked_index_by_the_reviewer_is_seen(
    layout: Layout, tmp_path: Path
) -> None:
    target = _symlinked_index(layout, tmp_path)

    def reviewer(w: Path) -> None:
        env = {**os.environ, "GIT_INDEX_FILE": str(target)}
        argv = ["git", "update-index", "--assume-unchanged", "README.md"]
        subprocess.run(argv, cwd=w, env=env, check=True)

    worker = [Step(effect=write("src/app.py", "def add(a, b):\n    return a + b\n"))]
    ran = trio.run(run, layout, worker, [Step(effect=reviewer)])
    assert ran.outcome.exit_code != 0  # 8f8e71f: 4, index-hides-changes


def _with_submodule(tmp_path: Path) -> Layout:
    """A repository whose linked worktree has the submodule ``mod`` (``s.txt``,
    ``d/t.txt``) checked out."""
    sub = init_repo(tmp_path / "subsrc", {"s.txt": "s\n", "d/t.txt": "t\n"})
    repo = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    git(repo, "commit", "-qm", "add a submodule")
    wt = add_linked_worktree(repo, tmp_path / "wt")
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    (tmp_path / "out").mkdir()
    return Layout(repo, wt, tmp_path / "out")


def test_a_file_added_in_a_submodule_behind_an_untracked_cache_is_refused(
    tmp_path: Path,
) -> None:
    layout = _with_submodule(tmp_path)
    wt = layout.wt
    git(wt / "mod", "config", "core.trustctime", "false")
    cache = ("-c", "core.untrackedCache=true", "-c", "status.showUntrackedFiles=all")

    def worker(w: Path) -> None:
        write("a.txt", "A\n")(w)
        time.sleep(1.2)  # the folder's mtime must not be racy against the index's
        git(w / "mod", *cache, "update-index", "--untracked-cache")
        git(w / "mod", *cache, "status")
        folder = w / "mod" / "d"
        st = folder.stat()
        (folder / "unseen.txt").write_text("smuggled into the submodule\n")
        os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))

    ran = trio.run(run, layout, [Step(effect=worker)], [Step()])
    assert (wt / "mod" / "d" / "unseen.txt").exists()
    error = ran.outcome.receipt.error
    assert error is not None and error.code == "unsupported-changed-path", error


def test_twin_a_symlinked_index_with_a_worker_that_only_edits_runs(
    layout: Layout, tmp_path: Path
) -> None:
    from tests.support.passes import counting_passes

    _symlinked_index(layout, tmp_path)
    worker = [Step(effect=write("src/app.py", "def add(a, b):\n    return a + b\n"))]
    with counting_passes() as seen:
        ran = trio.run(run, layout, worker, [Step()])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error
    initial = ran.outcome.receipt.candidate.initial
    assert initial is not None and [f.path for f in initial.body.files] == ["src/app.py"]
    # nothing vouched for the symlinked index: its entries were read at every check
    assert seen["git ls-files --debug"] > 1, seen


def test_twin_a_file_added_in_a_submodule_without_a_cache_is_refused(tmp_path: Path) -> None:
    layout = _with_submodule(tmp_path)

    def worker(w: Path) -> None:
        write("a.txt", "A\n")(w)
        (w / "mod" / "d" / "unseen.txt").write_text("added in the submodule\n")

    ran = trio.run(run, layout, [Step(effect=worker)], [Step()])
    error = ran.outcome.receipt.error
    assert error is not None and error.code == "unsupported-changed-path", error
