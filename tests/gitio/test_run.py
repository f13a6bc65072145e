"""git failures keep git's own words (SPEC A-1, F-2): the first stderr lines, made inert."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.gitio.run import GIT_FAILED, GitFailure, run_git, stderr_excerpt
from tests.support.git import init_repo


def test_a_failed_git_command_names_what_git_said(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    with pytest.raises(GitFailure) as caught:
        run_git(repo, ["rev-parse", "--verify", "no-such-ref"], what="git rev-parse")
    err = caught.value
    assert err.spec is GIT_FAILED and err.exit_code == 4
    assert err.fact.startswith("git rev-parse failed (git exit 128): fatal: ")
    assert "run git status to see why" not in err.message
    assert err.message.endswith(GIT_FAILED.next_step)


def test_the_excerpt_is_the_first_lines_one_line_and_inert() -> None:
    stderr = b"fatal: one\n\n\x1b[31mred\x1b[0m\nthird\nfourth is dropped\n"
    excerpt = stderr_excerpt(stderr)
    assert excerpt == "fatal: one | \\x1b[31mred\\x1b[0m | third"
    assert "\n" not in excerpt and "\x1b" not in excerpt
    assert stderr_excerpt(b"") == "no message"  # twin: git said nothing
    assert stderr_excerpt(b"\xff\xfe bad bytes") == "\ufffd\ufffd bad bytes"


def _commit(repo: Path, text: str) -> str:
    (repo / "f.txt").write_text(text)
    run_git(repo, ["add", "f.txt"])
    env = {"GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}
    run_git(
        repo, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", text], env_extra=env
    )
    return run_git(repo, ["rev-parse", "HEAD"]).decode().strip()


def test_replace_refs_and_grafts_never_change_what_factory_reads(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = _commit(repo, "base\n")
    other = _commit(repo, "other\n")
    tree = run_git(repo, ["cat-file", "-p", base]).split(b"\n")[0].split()[1].decode()
    run_git(repo, ["replace", base, other])  # plain git now reads `other` for `base`
    assert run_git(repo, ["rev-parse", f"{base}^{{tree}}"]).decode().strip() == tree
    assert run_git(repo, ["cat-file", "blob", f"{base}:f.txt"]) == b"base\n"
    run_git(repo, ["replace", "-d", base])
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "grafts").write_text(f"{other}\n")  # `other` without parents
    assert run_git(repo, ["rev-list", other]).split()[:2] == [other.encode(), base.encode()]
