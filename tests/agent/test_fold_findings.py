"""Reproductions of what the break25 attack on the issue 25 folds found, kept as strict
expected failures until the production code is fixed (then they pass and the marker goes).

1. A symlinked index: the git directories' binding records ``git-dir/index`` as a symlink
   (its target), not the bytes git reads through it, so ``own_index_records`` stays equal
   while the worker rewrites the target. The entry digest was reused on that record before
   the folds too (the staging was never refused as a git mutation), but the derivation
   listed the worktree itself and the staged file was in the candidate; now the listing
   is the stale read's too, and the file is in no tree, patch or changed-file list (only
   the status bytes show ``1 A.`` for it). Former commit 8f8e71f: exit 0 with
   ``evil.txt`` and ``src/app.py`` in the candidate; now: exit 0 with ``src/app.py`` only.
   The reviewer's variant: through the same link it marks ``README.md`` assume-unchanged;
   8f8e71f's re-derivation listed it hidden and failed the run (``index-hides-changes``),
   now the stale listing has no hidden entry and the run completes.
2. Not from the folds (the same on 8f8e71f): a submodule's plain ``git status``
   (:func:`factory.gitio.gitdata.repo_dirty`, no ``--ignored``) answers from an untracked
   cache the worker built in the submodule's index (which no binding holds); with ctime
   not trusted (``core.trustctime=false``, or ``core.checkStat=minimal``, here the
   submodule's own configuration, as a user's global one would be) a file the worker adds
   in a submodule folder whose mtime it puts back is unseen: the run completes.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import trio

from tests.agent.fakes import Step, write
from tests.agent.helpers import run
from tests.support.git import add_linked_worktree, git, init_repo
from tests.support.layout import Layout


@pytest.mark.xfail(strict=True, reason="break25 finding 1: a symlinked index is reused stale")
def test_a_file_staged_through_a_symlinked_index_is_not_lost(
    layout: Layout, tmp_path: Path
) -> None:
    wt = layout.wt
    index = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    target = tmp_path / "elsewhere" / "index"
    target.parent.mkdir()
    os.replace(index, target)
    index.symlink_to(target)

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


@pytest.mark.xfail(strict=True, reason="break25 finding 1: a symlinked index is reused stale")
def test_a_hide_bit_set_through_a_symlinked_index_by_the_reviewer_is_seen(
    layout: Layout, tmp_path: Path
) -> None:
    wt = layout.wt
    index = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    target = tmp_path / "elsewhere" / "index"
    target.parent.mkdir()
    os.replace(index, target)
    index.symlink_to(target)

    def reviewer(w: Path) -> None:
        env = {**os.environ, "GIT_INDEX_FILE": str(target)}
        argv = ["git", "update-index", "--assume-unchanged", "README.md"]
        subprocess.run(argv, cwd=w, env=env, check=True)

    worker = [Step(effect=write("src/app.py", "def add(a, b):\n    return a + b\n"))]
    ran = trio.run(run, layout, worker, [Step(effect=reviewer)])
    assert ran.outcome.exit_code != 0  # 8f8e71f: 4, index-hides-changes


@pytest.mark.xfail(strict=True, reason="break25 finding 2: a submodule's untracked cache")
def test_a_file_added_in_a_submodule_behind_an_untracked_cache_is_refused(
    tmp_path: Path,
) -> None:
    sub = init_repo(tmp_path / "subsrc", {"s.txt": "s\n", "d/t.txt": "t\n"})
    repo = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    git(repo, "commit", "-qm", "add a submodule")
    wt = add_linked_worktree(repo, tmp_path / "wt")
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    (tmp_path / "out").mkdir()
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

    ran = trio.run(run, Layout(repo, wt, tmp_path / "out"), [Step(effect=worker)], [Step()])
    assert (wt / "mod" / "d" / "unseen.txt").exists()
    error = ran.outcome.receipt.error
    assert error is not None and error.code == "unsupported-changed-path", error
