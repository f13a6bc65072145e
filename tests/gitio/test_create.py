"""``factory.gitio.create``: a fresh linked worktree holding the base tree's raw blobs, from
real repositories (normal, bare, reached through a linked worktree or a subfolder, a
submodule's repository, SHA-256), with no repository-configured program ever run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from factory.gitio.create import WorktreeSpec, create_worktree, plan_worktree
from factory.gitio.index_file import IndexEntry, index_bytes
from factory.gitio.worktree import head_ref
from tests.gitio.helpers import (
    assert_raw_checkout,
    booby_trapped,
    registrations,
    sample_repo,
    snapshot,
)
from tests.support.git import add_linked_worktree, git, init_repo


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def created(spec: WorktreeSpec, run_id: str = "0123456789ab") -> tuple[Path, str]:
    plan = plan_worktree(spec, run_id)
    wt = create_worktree(plan)
    assert wt.root == plan.path and wt.git_dir != wt.common_dir
    return wt.root, plan.base_commit


def assert_clean_and_exact(repo: Path, root: Path, commit: str) -> None:
    assert git(root, "status", "--porcelain=v2", "-z", "--untracked-files=all") == ""
    assert git(root, "rev-parse", "HEAD").strip() == commit
    # The index describes exactly the base tree, and git trusts its stat data.
    assert git(root, "write-tree").strip() == git(repo, "rev-parse", f"{commit}^{{tree}}").strip()
    assert assert_raw_checkout(repo, root, commit) > 0


def test_normal_repository_default_folder_branch_and_raw_bytes(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    root, commit = created(WorktreeSpec(repo))
    assert root == tmp_path / "proj.factory-run-0123456789ab"  # beside, named after the run
    assert commit == head(repo) and len(commit) == 40
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/factory/run-0123456789ab"
    assert_clean_and_exact(repo, root, commit)
    assert os.readlink(root / "link") == "src/app.py"


def test_the_base_is_pinned_to_a_full_commit_id(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(repo, "tag", "-a", "-m", "v1", "v1", first)
    plan = plan_worktree(WorktreeSpec(repo, base="v1", path=tmp_path / "wt"), "0123456789ab")
    assert plan.base_commit == first  # the annotated tag, peeled to its commit, once
    git(repo, "tag", "-f", "-a", "-m", "moved", "v1", "HEAD")  # the name moves afterwards
    wt = create_worktree(plan)
    assert git(wt.root, "rev-parse", "HEAD").strip() == first


def test_detached_head_with_an_empty_branch_name(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    plan = plan_worktree(WorktreeSpec(repo, branch="", path=tmp_path / "wt"), "0123456789ab")
    assert plan.branch is None
    wt = create_worktree(plan)
    assert head_ref(wt) is None
    assert "factory/" not in git(repo, "branch", "--list")


@pytest.mark.parametrize("where", ["top", "subfolder", "git-dir", "linked-worktree"])
def test_any_folder_of_the_repository_resolves_it(tmp_path: Path, where: str) -> None:
    repo = sample_repo(tmp_path / "proj")
    start = {
        "top": repo,
        "subfolder": repo / "src" / "deep",
        "git-dir": repo / ".git" / "refs",
        "linked-worktree": add_linked_worktree(repo, tmp_path / "other"),
    }[where]
    root, commit = created(WorktreeSpec(start, path=tmp_path / "new"))
    assert Path(git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()) == (
        repo / ".git"
    )
    assert commit == head(repo)
    assert_clean_and_exact(repo, root, commit)


def test_default_folder_leaves_a_worktree_nested_in_the_main_checkout(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    nested = add_linked_worktree(repo, repo / ".worktrees" / "w2", branch="w2")
    root, _ = created(WorktreeSpec(nested))
    assert root == tmp_path / "proj.factory-run-0123456789ab"  # not proj/.worktrees/w2.…


def test_bare_repository(tmp_path: Path) -> None:
    src = sample_repo(tmp_path / "src")
    bare = tmp_path / "proj.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    root, commit = created(WorktreeSpec(bare))
    assert root == tmp_path / "proj.factory-run-0123456789ab"
    assert_clean_and_exact(bare, root, commit)


def test_a_submodules_repository(tmp_path: Path) -> None:
    sub_src = sample_repo(tmp_path / "subsrc")
    sup = init_repo(tmp_path / "super")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_src), "sub")
    git(sup, "commit", "-q", "-m", "add sub")
    root, commit = created(WorktreeSpec(sup / "sub", path=tmp_path / "sub-wt"))
    common = git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    assert Path(common) == sup / ".git" / "modules" / "sub"
    assert commit == head(sup / "sub")
    assert_clean_and_exact(sup / "sub", root, commit)
    # The superproject itself, with its gitlink, checks out as an empty folder (as git does).
    sroot, scommit = created(WorktreeSpec(sup, path=tmp_path / "super-wt"), "ba0123456789")
    assert (sroot / "sub").is_dir() and not any((sroot / "sub").iterdir())
    assert_clean_and_exact(sup, sroot, scommit)


def test_sha256_repository(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256", "-b", "main")
    (repo / "f.txt").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    root, commit = created(WorktreeSpec(repo, path=tmp_path / "wt"))
    assert len(commit) == 64
    assert_clean_and_exact(repo, root, commit)


def test_index_bytes_equal_gits_own(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    for name in ("README.md", "run.sh", "link", "src/app.py", "a-b.txt", "a/z.txt"):
        target = fresh / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (repo / name).is_symlink():
            target.symlink_to(os.readlink(repo / name))
        else:
            target.write_bytes((repo / name).read_bytes())
            target.chmod((repo / name).stat().st_mode)
    names = ["README.md", "run.sh", "link", "src/app.py", "a-b.txt", "a/z.txt"]
    git(fresh, "update-index", "--add", *names)  # git writes no extension for this
    entries = []
    for rec in git(fresh, "ls-files", "-s", "-z").split("\0"):
        if rec:
            meta, path = rec.split("\t")
            mode, oid, _ = meta.split(" ")
            st = os.lstat(fresh / path)
            entries.append(IndexEntry(path.encode(), int(mode, 8), oid, st))
    assert index_bytes(entries[::-1]) == (fresh / ".git" / "index").read_bytes()


MARKERS = ("smudge", "clean", "process", "post-checkout", "reference-transaction", "fsmonitor")


def test_no_filter_hook_or_fsmonitor_runs_and_bytes_are_the_blobs(tmp_path: Path) -> None:
    repo, marks = booby_trapped(tmp_path)
    root, commit = created(WorktreeSpec(repo, path=tmp_path / "wt"))
    assert sorted(os.listdir(marks)) == []
    assert (root / "notes.txt").read_bytes() == b"$Id$\nline two\n"  # no ident expansion
    assert (root / "plain.md").read_bytes() == b"line one\nline two\n"  # no CRLF
    assert (root / "wide.cfg").read_bytes() == "caf\u00e9\n".encode()  # not UTF-16
    assert assert_raw_checkout(repo, root, commit) == 4


def test_control_plain_git_worktree_add_runs_them_all(tmp_path: Path) -> None:
    """Negative control: the same repository *does* trip every trap under plain git."""
    repo, marks = booby_trapped(tmp_path)
    git(repo, "worktree", "add", "-q", "-b", "plain", str(tmp_path / "plain"))
    assert {"smudge", "post-checkout", "reference-transaction"} <= set(os.listdir(marks))
    assert (tmp_path / "plain" / "notes.txt").read_bytes() != b"$Id$\nline two\n"
    assert (tmp_path / "plain" / "plain.md").read_bytes() == b"line one\r\nline two\r\n"
    assert set(MARKERS) >= set(os.listdir(marks))


def test_other_worktree_registrations_are_never_touched(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    add_linked_worktree(repo, tmp_path / "locked", branch="locked")
    git(repo, "worktree", "lock", "--reason", "mine", str(tmp_path / "locked"))
    add_linked_worktree(repo, tmp_path / "gone", branch="gone")
    subprocess.run(["rm", "-rf", str(tmp_path / "gone")], check=True)  # now prunable
    before = registrations(repo / ".git")
    root, _ = created(WorktreeSpec(repo, path=tmp_path / "new"))
    after = registrations(repo / ".git")
    ours = root.name + os.sep
    assert {k: v for k, v in after.items() if not k.startswith(ours) and k != root.name} == before
    assert "prunable" in git(repo, "worktree", "list", "--porcelain")


def test_a_clean_worktree_stays_clean_for_gits_racy_check(tmp_path: Path) -> None:
    """Every file's mtime is a whole second older than the index: status trusts the stat
    data (no re-hash through a clean filter), and a same-size edit is still seen."""
    repo, marks = booby_trapped(tmp_path)
    root, _ = created(WorktreeSpec(repo, path=tmp_path / "wt"))
    gitdir = Path(git(root, "rev-parse", "--path-format=absolute", "--git-dir").strip())
    index_s = os.stat(gitdir / "index").st_mtime_ns // 1_000_000_000
    for name in ("notes.txt", "plain.md", "wide.cfg", ".gitattributes"):
        assert os.stat(root / name).st_mtime_ns // 1_000_000_000 < index_s
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    out = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "status", "--porcelain"],
        cwd=root,
        env=env,
        capture_output=True,
        check=True,
    )
    assert out.stdout == b"" and os.listdir(marks) == []
    (root / "plain.md").write_bytes(b"LINE ONE\nline two\n")  # same size
    out = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "-c", "filter.trap.clean=cat", "status", "-s"],
        cwd=root,
        env=env,
        capture_output=True,
        check=True,
    )
    assert out.stdout == b" M plain.md\n"


def test_folders_are_snapshotted_unchanged_by_planning(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "proj")
    before = snapshot(tmp_path)
    plan_worktree(WorktreeSpec(repo), "0123456789ab")
    assert snapshot(tmp_path) == before
