"""A worker's edit inside a submodule is in no superproject tree or patch, so it cannot be
bound (SPEC A-4). Observed before the fix: the run completed with only the top-level file
in the candidate while the reviewer judged a worktree with the unbound submodule edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.gitio.candidate import submodule_changed
from tests.agent.conftest import Layout
from tests.agent.fakes import Step, chain, write
from tests.agent.helpers import run
from tests.support.git import add_linked_worktree, git, init_repo


@pytest.fixture
def with_submodule(tmp_path: Path) -> Layout:
    sub = init_repo(tmp_path / "subsrc", {"s.txt": "s\n"})
    repo = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    git(repo, "commit", "-qm", "add a submodule")
    wt = add_linked_worktree(repo, tmp_path / "wt")
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    out = tmp_path / "out"
    out.mkdir()
    return Layout(repo, wt, out)


async def test_an_edit_inside_a_submodule_fails_as_unsupported(with_submodule: Layout) -> None:
    edit = chain(write("a.txt", "A\n"), write("mod/s.txt", "unbound\n"))
    ran = await run(with_submodule, [Step(effect=edit)], [Step()])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "unsupported-changed-path"
    assert ran.reviewer.calls == []


async def test_twin_a_top_level_edit_next_to_a_clean_submodule_completes(
    with_submodule: Layout,
) -> None:
    ran = await run(with_submodule, [Step(effect=write("a.txt", "A\n"))], [Step()])
    r = ran.outcome.receipt
    assert ran.outcome.exit_code == 0 and r.candidate.initial is not None
    assert [f.path for f in r.candidate.initial.body.files] == ["a.txt"]


def test_the_status_parser_reads_only_the_sub_field() -> None:
    z = "0" * 40
    plain = f"1 .M N... 100644 100644 100644 {z} {z} S.M. is a name".encode()
    sub = f"1 .M S.M. 160000 160000 160000 {z} {z} mod".encode()
    renamed = f"2 R. N... 100644 100644 100644 {z} {z} R100 new".encode() + b"\0" + b"1 .M S"
    assert not submodule_changed(plain + b"\0")
    assert submodule_changed(sub + b"\0")
    assert not submodule_changed(renamed + b"\0")  # the original path record is skipped
    assert not submodule_changed(b"? 1 .M S.M. x\0")


async def test_a_dirty_submodule_is_refused_at_admission(with_submodule: Layout) -> None:
    from tests.agent.test_admission import admitted, refused, req

    (with_submodule.wt / "mod" / "s.txt").write_text("dirty before the run\n")
    await refused(req(with_submodule), "worktree-not-clean")
    git(with_submodule.wt / "mod", "checkout", "--", "s.txt")  # twin: clean again
    await admitted(req(with_submodule))
