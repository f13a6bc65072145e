"""``factory.agent.control.bind_control``: what is bound, what is left out, and that a
write is seen even where the first binding used stat identity instead of content."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from factory.agent import control
from factory.agent.binding import Bound, changed_paths
from factory.agent.control import bind_control, editor_ignores
from factory.gitio.worktree import locate
from tests.agent.conftest import Layout
from tests.gitio.plant import common_dir
from tests.support.git import add_linked_worktree, git


def aged(b: Bound) -> Bound:
    """The binding as if taken long after every file was written."""
    return Bound(b.entries, b.digest, b.started_ns + 10 * 10**9)


def test_object_storage_is_never_listed_but_its_configuration_is(layout: Layout) -> None:
    wt = locate(layout.wt)
    labels = set(bind_control(wt).entries)
    objects = {lab for lab in labels if lab.startswith(b"common-dir/objects")}
    assert objects == {
        b"common-dir/objects/info/alternates",
        b"common-dir/objects/info/http-alternates",
    }
    assert b"git-dir/index" in labels and b"common-dir/index" not in labels
    own = os.fsencode(wt.git_dir.relative_to(wt.common_dir))
    assert not any(lab.startswith(b"common-dir/" + own) for lab in labels)


def test_other_worktrees_and_submodule_repositories_are_git_dirs(layout: Layout) -> None:
    add_linked_worktree(layout.repo, layout.repo.parent / "wt2", "other")
    mod = common_dir(layout.wt) / "modules" / "lib" / "m"
    (mod / "objects").mkdir(parents=True)
    (mod / "HEAD").write_text("ref: refs/heads/main\n")
    (mod / "index").write_text("a submodule checkout's index\n")
    labels = set(bind_control(locate(layout.wt)).entries)
    assert b"common-dir/worktrees/wt2/HEAD" in labels
    assert b"common-dir/worktrees/wt2/index" not in labels  # its refresh is a read
    assert b"common-dir/modules/lib/m/HEAD" in labels
    assert b"common-dir/modules/lib/m/index" not in labels
    assert not any(lab.startswith(b"common-dir/modules/lib/m/objects") for lab in labels)


def test_a_rewrite_is_seen_after_a_stat_identity_binding(layout: Layout) -> None:
    wt = locate(layout.wt)
    config = common_dir(layout.wt) / "config"
    os.utime(config, ns=(1, 1))  # old mtime; the ctime is now, so it is read by content
    first = bind_control(wt)
    assert not first.entries[b"common-dir/config"].content.startswith("stat:")
    old = aged(first)
    again = bind_control(wt, old)  # everything old enough: stat identity or cached
    st = config.stat()
    config.write_text(config.read_text().replace("bare = false", "bare = FALSE"))
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    assert changed_paths(again, bind_control(wt, aged(again))) == [b"common-dir/config"]


def test_twin_an_untouched_repository_binds_the_same_twice(layout: Layout) -> None:
    wt = locate(layout.wt)
    first = bind_control(wt)
    assert changed_paths(first, bind_control(wt, aged(first))) == []


def test_editors_ignore_only_their_own_index_files() -> None:
    assert editor_ignores(b"git-dir/index") and editor_ignores(b"git-dir/sharedindex.ab12")
    assert editor_ignores(b"git-dir/index.lock")
    assert not editor_ignores(b"git-dir/logs/index")
    assert not editor_ignores(b"common-dir/index")  # not bound at all, never compared
    assert not editor_ignores(b"git-dir/MERGE_HEAD")


def test_the_git_dir_finder_handles_nested_submodules(tmp_path: Path) -> None:
    top = tmp_path / "common"
    for rel in ("modules/a", "modules/a/modules/b"):
        (top / rel / "objects").mkdir(parents=True)
        (top / rel / "HEAD").write_text("x")
    (top / "worktrees" / "w").mkdir(parents=True)
    (top / "worktrees" / "w" / "HEAD").write_text("x")
    (top / "worktrees" / "w" / "commondir").write_text("../..")
    (top / "modules" / "plain-folder").mkdir()
    found = control._git_dirs(os.fsencode(top))
    assert found == {b"", b"modules/a", b"modules/a/modules/b", b"worktrees/w"}


def test_git_status_in_the_primary_checkout_is_not_a_change(layout: Layout) -> None:
    wt = locate(layout.wt)
    first = bind_control(wt)
    os.utime(layout.repo / "README.md")
    git(layout.repo, "status")  # refreshes the primary checkout's index
    assert changed_paths(first, bind_control(wt, first)) == []


def test_a_file_read_while_racy_is_compared_by_content_later(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = locate(layout.wt)
    first = bind_control(wt)  # fresh files: read by content
    assert first.entries[b"common-dir/config"].content and not first.entries[
        b"common-dir/config"
    ].content.startswith("stat:")
    later = time.time_ns() + 10 * 10**9
    monkeypatch.setattr(control.time, "time_ns", lambda: later)
    # Now every file is old enough for stat identity, but none was trusted in `first`.
    assert changed_paths(first, bind_control(wt, first)) == []
