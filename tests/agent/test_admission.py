"""Admission (SPEC A-1): every refusal exits 2 before anything runs or is written; each has
a negative-control twin that is admitted."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from factory.agent.admission import admit
from tests.agent.admission_checks import admitted, refused, req
from tests.agent.fakes import write
from tests.support.git import add_linked_worktree, git, init_repo
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


async def test_linked_worktree_is_admitted(layout: Layout) -> None:
    await admitted(req(layout))


async def test_primary_checkout_is_refused(layout: Layout) -> None:
    (layout.repo / "src" / "app.py").write_text("x")  # even the file is irrelevant: refused first
    git(layout.repo, "checkout", "--", ".")
    await refused(req(layout, worktree=layout.repo), "linked-worktree-required")


async def test_submodule_primary_checkout_is_refused(tmp_path: Path, layout: Layout) -> None:
    sub = init_repo(tmp_path / "subsrc", {"src/app.py": "def add(a, b):\n    return a - b\n"})
    sup = init_repo(tmp_path / "super")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    git(sup, "commit", "-qm", "add submodule")
    checkout = sup / "mod"
    assert (checkout / ".git").is_file()  # it looks like a linked worktree, but is not
    await refused(req(layout, worktree=checkout), "linked-worktree-required")


async def test_linked_worktree_of_a_submodule_is_admitted(tmp_path: Path, layout: Layout) -> None:
    sub = init_repo(tmp_path / "subsrc", {"src/app.py": "def add(a, b):\n    return a - b\n"})
    sup = init_repo(tmp_path / "super")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    linked = add_linked_worktree(sup / "mod", tmp_path / "modwt", "work2")
    await admitted(req(layout, worktree=linked))


async def test_bare_repository_worktree_is_admitted(tmp_path: Path, layout: Layout) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(layout.repo), str(bare))
    wt = tmp_path / "barewt"
    git(bare, "worktree", "add", "-q", "-b", "w", str(wt))
    await admitted(req(layout, worktree=wt))


async def test_subfolder_of_a_worktree_is_refused(layout: Layout) -> None:
    await refused(req(layout, worktree=layout.wt / "src"), "not-worktree-root")


async def test_not_a_git_folder_is_refused(tmp_path: Path, layout: Layout) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    await refused(req(layout, worktree=plain), "not-a-git-worktree")
    await refused(req(layout, worktree=tmp_path / "absent"), "worktree-missing")


def _staged(wt: Path) -> None:
    (wt / "README.md").write_text("staged\n")
    git(wt, "add", "README.md")


def _unstaged(wt: Path) -> None:
    (wt / "README.md").write_text("unstaged\n")


def _untracked(wt: Path) -> None:
    (wt / "new.txt").write_text("new\n")


def _untracked_deep(wt: Path) -> None:
    (wt / "a" / "b").mkdir(parents=True)
    (wt / "a" / "b" / "c.txt").write_text("new\n")


def _mode_only(wt: Path) -> None:
    (wt / "README.md").chmod(0o755)


def _deleted(wt: Path) -> None:
    (wt / "README.md").unlink()


DIRTY: dict[str, Callable[[Path], None]] = {
    "staged": _staged,
    "unstaged": _unstaged,
    "untracked": _untracked,
    "untracked-deep": _untracked_deep,
    "mode-only": _mode_only,
    "deleted": _deleted,
}


@pytest.mark.parametrize("name", sorted(DIRTY))
async def test_dirty_worktree_is_refused(layout: Layout, name: str) -> None:
    DIRTY[name](layout.wt)
    await refused(req(layout), "worktree-not-clean")


async def test_negative_control_ignored_files_do_not_make_it_dirty(layout: Layout) -> None:
    (layout.wt / "build").mkdir()
    (layout.wt / "build" / "x.o").write_text("obj")
    (layout.wt / "node_modules" / "more.js").write_text("1")
    await admitted(req(layout))


def gitdirs(layout: Layout) -> tuple[Path, Path]:
    out = git(layout.wt, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    a, b = out.split()
    return Path(a), Path(b)


@pytest.mark.parametrize("flag", ["receipt", "evidence"])
async def test_inside_the_worktree_directly(layout: Layout, flag: str) -> None:
    if flag == "receipt":
        await refused(req(layout, receipt=layout.wt / "r.json"), "receipt-inside-worktree")
    else:
        await refused(req(layout, evidence=layout.wt / "ev"), "evidence-inside-worktree")


@pytest.mark.parametrize("flag", ["receipt", "evidence"])
async def test_inside_the_worktree_via_a_symlinked_alias(
    tmp_path: Path, layout: Layout, flag: str
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(layout.wt)
    if flag == "receipt":
        await refused(req(layout, receipt=alias / "sub" / "r.json"), "receipt-inside-worktree")
    else:
        await refused(req(layout, evidence=alias / "ev"), "evidence-inside-worktree")


async def test_inside_via_a_symlinked_parent_of_a_missing_tail(
    tmp_path: Path, layout: Layout
) -> None:
    alias = tmp_path / "alias2"
    alias.symlink_to(layout.wt / "src")
    await refused(req(layout, receipt=alias / "new" / "r.json"), "receipt-inside-worktree")


@pytest.mark.parametrize("which", ["common", "own"])
async def test_inside_a_git_directory(layout: Layout, which: str) -> None:
    own, common = gitdirs(layout)
    folder = common if which == "common" else own
    await refused(req(layout, receipt=folder / "r.json"), "receipt-inside-worktree")
    await refused(req(layout, evidence=folder / "ev"), "evidence-inside-worktree")


async def test_inside_the_common_dir_via_alias(tmp_path: Path, layout: Layout) -> None:
    _, common = gitdirs(layout)
    alias = tmp_path / "gitalias"
    alias.symlink_to(common)
    await refused(req(layout, receipt=alias / "r.json"), "receipt-inside-worktree")


async def test_existing_receipt_is_refused_and_left_untouched(layout: Layout) -> None:
    layout.receipt.write_text("keep me")
    await refused(req(layout), "receipt-exists")
    assert layout.receipt.read_text() == "keep me"


async def test_dangling_symlink_receipt_is_refused(tmp_path: Path, layout: Layout) -> None:
    layout.receipt.symlink_to(tmp_path / "nowhere")
    await refused(req(layout), "receipt-exists")


async def test_existing_evidence_is_refused(layout: Layout) -> None:
    layout.evidence.mkdir()
    await refused(req(layout), "evidence-exists")


async def test_missing_receipt_folder_is_refused(layout: Layout) -> None:
    await refused(req(layout, receipt=layout.out / "no" / "r.json"), "receipt-folder-missing")


@pytest.mark.parametrize("task", ["", "   ", "\n\t"])
async def test_empty_task_is_refused(layout: Layout, task: str) -> None:
    await refused(req(layout, task=task), "task-required")


@pytest.mark.parametrize("ms", [0, 999, 1_800_001])
async def test_timeout_out_of_range(layout: Layout, ms: int) -> None:
    await refused(req(layout, timeout_ms=ms), "timeout-out-of-range")


@pytest.mark.parametrize("ms", [1_000, 1_800_000])
def test_timeout_bounds_are_admitted(layout: Layout, ms: int) -> None:
    assert admit(req(layout, timeout_ms=ms)).request.timeout_ms == ms


def test_admission_leaves_the_real_index_untouched(layout: Layout) -> None:
    before = layout.index_bytes()
    stamp = os.stat(gitdirs(layout)[0] / "index").st_mtime_ns
    admit(req(layout))
    assert layout.index_bytes() == before
    assert os.stat(gitdirs(layout)[0] / "index").st_mtime_ns == stamp
