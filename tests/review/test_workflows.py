"""Every ordinary git workflow reaches an allow at its gate, or a named terminal answer, by
following the ``next`` commands factory prints (issue 23 §1).

Each workflow drives real git and the real CLI in a temporary repository; the driver
(``workflow_driver.py``) asks the intended gate and follows the first runnable ``next``
of each answer, failing on an empty ``next``, prose in ``next``, a cycle or no end within
its bound. Each workflow has a twin whose change was never reviewed: its first answer is a
denial, and the walk reaches an allow only through a review of the new candidate.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.review.cli_helpers import BASE_FILES, edit_parser, review, snapshot_bytes, store_root
from tests.review.gates_support import approve, commit
from tests.review.mirror_support import with_remote
from tests.review.workflow_driver import Driver, Trail
from tests.support.git import git, init_repo

Setup = Callable[[Path, Path], None]


def _repo(tmp: Path) -> Path:
    """A repository with a bare ``origin``, on branch ``topic`` tracking ``origin/topic``."""
    repo = init_repo(tmp / "repo", dict(BASE_FILES))
    with_remote(repo, tmp)
    git(repo, "switch", "-q", "-c", "topic")
    git(repo, "push", "-q", "-u", "origin", "topic")
    return repo


def _approve(repo: Path, tmp: Path) -> None:
    edit_parser(repo, lines=2)
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    (tmp / "approve").mkdir(exist_ok=True)
    approve(repo, tmp / "approve")


def _reviewed(trail: Trail) -> bool:
    """The walk approved a new candidate on the way (start or recover, then finalize)."""
    return trail.ran("finalize") and (trail.ran("start") or trail.ran("recover"))


def _walk(repo: Path, tmp: Path, gate: str, *gate_args: str) -> Trail:
    trail = Driver(repo, tmp / f"inputs-{gate}", gate, gate_args).drive()
    assert trail.end == "allow", trail.steps
    return trail


PUSH = ("--remote", "origin")
PR = ("--base-ref", "origin/main")


def _deliver(repo: Path, tmp: Path) -> None:
    """The rest of the ordinary route, each boundary by the printed commands: commit what is
    left (after an allow at pre-commit), push (after an allow at pre-push), then pre-pr."""
    if git(repo, "status", "--porcelain"):
        _walk(repo, tmp, "pre-commit")
        commit(repo)
    _walk(repo, tmp, "pre-push", *PUSH)
    git(repo, "push", "-q", "origin", "HEAD:topic")
    _walk(repo, tmp, "pre-pr", *PR)


def _unchanged(trail: Trail) -> None:
    """The approval still holds: allowed at once, nothing superseded."""
    assert len(trail.steps) == 1, trail.steps


def _edited(trail: Trail) -> None:
    """A candidate nobody reviewed: denied first, allowed only after its own review."""
    assert trail.steps[0][1] != 0 and _reviewed(trail), trail.steps


def _restarted(trail: Trail) -> None:
    """The reviewed base left HEAD's history: denied first, allowed after a review started
    on the concrete base factory named (never an empty lineage)."""
    assert trail.steps[0][1] != 0 and trail.ran("finalize"), trail.steps
    assert trail.ran("start --base-ref "), trail.steps


# --- the workflows: (setup after an approval, intended gate, what the walk must show)


def wf_commit_push(repo: Path, tmp: Path) -> None:
    commit(repo)


def wf_commit_push_twin(repo: Path, tmp: Path) -> None:
    edit_parser(repo, lines=1, start=40)
    commit(repo)


def wf_commit_then_edit(repo: Path, tmp: Path) -> None:
    commit(repo)
    edit_parser(repo, lines=1, start=40)


def wf_edit_before_commit(repo: Path, tmp: Path) -> None:
    edit_parser(repo, lines=1, start=40)


def wf_amend_message(repo: Path, tmp: Path) -> None:
    commit(repo)
    git(repo, "commit", "-q", "--amend", "-m", "a better message")


def wf_amend_content(repo: Path, tmp: Path) -> None:
    commit(repo)
    edit_parser(repo, lines=1, start=40)
    git(repo, "commit", "-q", "-a", "--amend", "--no-edit")


def wf_stash_unstash(repo: Path, tmp: Path) -> None:
    git(repo, "stash", "-q")
    git(repo, "stash", "pop", "-q")


def wf_stash_unstash_twin(repo: Path, tmp: Path) -> None:
    git(repo, "stash", "-q")
    git(repo, "stash", "pop", "-q")
    (repo / "README.md").write_text("changed after the unstash\n")


def wf_untracked_ignored(repo: Path, tmp: Path) -> None:
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"operational state")


def wf_untracked_new(repo: Path, tmp: Path) -> None:
    (repo / "src" / "helper.py").write_text("def helper():\n    return 1\n")


def wf_branch_switch(repo: Path, tmp: Path) -> None:
    commit(repo)
    git(repo, "switch", "-q", "main")
    git(repo, "switch", "-q", "topic")


def wf_branch_switch_twin(repo: Path, tmp: Path) -> None:
    commit(repo)
    git(repo, "switch", "-q", "-c", "other", "main")
    (repo / "README.md").write_text("another branch's change\n")
    commit(repo)


def _move_upstream(repo: Path) -> None:
    """Someone else's change lands on origin/main (a path the review never saw)."""
    git(repo, "switch", "-q", "main")
    (repo / "NOTES.md").write_text("upstream moved\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "upstream")
    git(repo, "push", "-q", "origin", "main")
    git(repo, "switch", "-q", "topic")


def wf_rebase_after_commit(repo: Path, tmp: Path) -> None:
    commit(repo)
    _move_upstream(repo)
    git(repo, "rebase", "-q", "origin/main")


def wf_pull_upstream_after_commit(repo: Path, tmp: Path) -> None:
    commit(repo)
    _move_upstream(repo)
    git(repo, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")


def wf_rebase_before_commit(repo: Path, tmp: Path) -> None:
    git(repo, "stash", "-q")
    _move_upstream(repo)
    git(repo, "rebase", "-q", "origin/main")
    git(repo, "stash", "pop", "-q")


def _approve_on_local_commit(repo: Path, tmp: Path) -> None:
    """The review's base is a local commit of the branch that a later squash rewrites."""
    (repo / "README.md").write_text("a local commit below the review\n")
    commit(repo, "local")
    _approve(repo, tmp)


def wf_squash_below_review(repo: Path, tmp: Path) -> None:
    commit(repo)
    git(repo, "reset", "-q", "--soft", "origin/topic")
    git(repo, "commit", "-q", "-m", "squashed")


def wf_squash_below_review_edited(repo: Path, tmp: Path) -> None:
    wf_squash_below_review(repo, tmp)
    edit_parser(repo, lines=1, start=40)
    commit(repo, "more")


SIMPLE: dict[str, tuple[Setup, str, Callable[[Trail], None]]] = {
    "commit-push": (wf_commit_push, "pre-push", _unchanged),
    "commit-push-twin": (wf_commit_push_twin, "pre-push", _edited),
    "commit-then-edit": (wf_commit_then_edit, "pre-commit", _edited),
    "edit-before-commit": (wf_edit_before_commit, "pre-commit", _edited),
    "amend-message": (wf_amend_message, "pre-push", _unchanged),
    "amend-content": (wf_amend_content, "pre-push", _edited),
    "stash-unstash": (wf_stash_unstash, "pre-commit", _unchanged),
    "stash-unstash-twin": (wf_stash_unstash_twin, "pre-commit", _edited),
    "untracked-ignored": (wf_untracked_ignored, "pre-commit", _unchanged),
    "untracked-new": (wf_untracked_new, "pre-commit", _edited),
    "branch-switch": (wf_branch_switch, "pre-push", _unchanged),
    "branch-switch-twin": (wf_branch_switch_twin, "pre-push", _edited),
    "rebase-after-commit": (wf_rebase_after_commit, "pre-push", _edited),
    "rebase-before-commit": (wf_rebase_before_commit, "pre-commit", _edited),
    "pull-upstream-after-commit": (wf_pull_upstream_after_commit, "pre-push", _edited),
}

#: Workflows whose approval sits on a local commit that the workflow rewrites.
LOCAL_BASE: dict[str, tuple[Setup, str, Callable[[Trail], None]]] = {
    "squash-below-review": (wf_squash_below_review, "pre-push", _restarted),
    "squash-below-review-edited": (wf_squash_below_review_edited, "pre-push", _restarted),
}


def _run_workflow(
    tmp: Path, row: tuple[Setup, str, Callable[[Trail], None]], approval: Setup
) -> None:
    setup, gate, check = row
    repo = _repo(tmp)
    approval(repo, tmp)
    setup(repo, tmp)
    check(_walk(repo, tmp, gate, *(PUSH if gate == "pre-push" else ())))
    _deliver(repo, tmp)


@pytest.mark.parametrize("name", list(SIMPLE))
def test_a_workflow_after_an_approval_reaches_an_allow_by_the_printed_commands(
    tmp_path: Path, name: str
) -> None:
    _run_workflow(tmp_path, SIMPLE[name], _approve)


@pytest.mark.parametrize("name", list(LOCAL_BASE))
def test_a_review_whose_base_left_the_history_restarts_on_the_named_base(
    tmp_path: Path, name: str
) -> None:
    _run_workflow(tmp_path, LOCAL_BASE[name], _approve_on_local_commit)


# --- converting checkouts: git stores other bytes than the raw ones that were reviewed

CRLF = b"first line\r\nsecond line\r\n"


def _autocrlf(value: str) -> Callable[[Path], Path]:
    def configure(repo: Path) -> Path:
        git(repo, "config", "core.autocrlf", value)
        return repo / "docs" / "windows.md"

    return configure


def _attribute(line: str, name: str) -> Callable[[Path], Path]:
    def configure(repo: Path) -> Path:
        (repo / ".gitattributes").write_text(line + "\n")
        commit(repo, "attributes")
        git(repo, "push", "-q", "origin", "HEAD:topic")
        git(repo, "push", "-q", "origin", "HEAD:main")
        return repo / "docs" / name

    return configure


CONVERTING: dict[str, Callable[[Path], Path]] = {
    "autocrlf-true": _autocrlf("true"),
    "autocrlf-input": _autocrlf("input"),
    "eol-lf-attribute": _attribute("*.md text eol=lf", "windows.md"),
    "text-attribute": _attribute("*.txt text", "windows.txt"),
}


def _converting_approval(repo: Path, tmp: Path, configure: Callable[[Path], Path]) -> Path:
    target = configure(repo)
    target.write_bytes(CRLF)
    _approve(repo, tmp)
    git(repo, "add", "-A")
    assert git(repo, "diff", "--cached", "--stat")  # git staged converted bytes
    return target


@pytest.mark.parametrize("name", list(CONVERTING))
def test_a_converting_checkout_staged_with_add_all_is_the_reviewed_candidate(
    tmp_path: Path, name: str
) -> None:
    repo = _repo(tmp_path)
    _converting_approval(repo, tmp_path, CONVERTING[name])
    _unchanged(_walk(repo, tmp_path, "pre-commit"))
    commit(repo)
    _unchanged(_walk(repo, tmp_path, "pre-push", *PUSH))
    git(repo, "push", "-q", "origin", "HEAD:topic")
    _unchanged(_walk(repo, tmp_path, "pre-pr", *PR))


@pytest.mark.parametrize("name", list(CONVERTING))
def test_twin_a_converting_checkout_edited_after_staging_is_not_the_reviewed_candidate(
    tmp_path: Path, name: str
) -> None:
    repo = _repo(tmp_path)
    target = _converting_approval(repo, tmp_path, CONVERTING[name])
    target.write_bytes(CRLF + b"third line, never reviewed\r\n")
    trail = _walk(repo, tmp_path, "pre-commit")
    _edited(trail)
    assert trail.ran("git add -A"), trail.steps  # partial staging is still named
    _deliver(repo, tmp_path)


def _lfs_like(repo: Path, log: Path) -> Path:
    """A clean/smudge filter configured in the repository (as git-lfs installs one); each
    run of it appends a line to ``log``."""
    script = repo.parent / "pointer-filter"
    script.write_text(f'#!/bin/sh\necho "$1" >> {log}\nsed "s/^/pointer:/"\n')
    script.chmod(0o755)
    git(repo, "config", "filter.pointer.clean", f"{script} clean")
    git(repo, "config", "filter.pointer.smudge", "cat")
    git(repo, "config", "filter.pointer.required", "true")
    (repo / ".gitattributes").write_text("*.bin filter=pointer\n")
    commit(repo, "attributes")
    git(repo, "push", "-q", "origin", "HEAD:topic")
    git(repo, "push", "-q", "origin", "HEAD:main")
    return repo / "docs" / "asset.bin"


def _settle(path: Path) -> None:
    """An mtime in the past: the index entry ``git add`` writes is not racy (an entry
    written in the same second as its file is re-hashed, and factory re-hashes without
    the filter, so it would count as changed — see design/review-gates.md)."""
    past = path.stat().st_mtime - 10
    os.utime(path, (past, past))


def test_a_filtered_path_is_vouched_by_git_at_commit_and_terminal_at_push(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    log = tmp_path / "filter-runs.log"
    target = _lfs_like(repo, log)
    target.write_bytes(b"large payload\n")
    _settle(target)
    _approve(repo, tmp_path)
    git(repo, "add", "-A")
    _unchanged(_walk(repo, tmp_path, "pre-commit"))  # git's own stat data vouches the blob
    commit(repo)
    runs = log.read_text()
    trail = Driver(repo, tmp_path / "push", "pre-push", PUSH).drive()
    assert trail.end == "terminal" and trail.last is not None, trail.steps
    denial = trail.last.doc["denial"]
    assert denial["code"] == "filtered-representation"
    assert trail.last.doc["reason"].startswith("terminal:")
    assert log.read_text() == runs  # factory never ran the repository's filter


def test_twin_a_filtered_path_edited_after_staging_is_denied(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    target = _lfs_like(repo, tmp_path / "filter-runs.log")
    target.write_bytes(b"large payload\n")
    _settle(target)
    _approve(repo, tmp_path)
    git(repo, "add", "-A")
    target.write_bytes(b"another payload, never reviewed\n")
    first = Driver(repo, tmp_path / "in", "pre-commit").ask()
    assert not first.doc["allowed"], first.doc["reason"]


# --- an approved lineage whose frozen policy bytes were removed from the store


def _drop_policy(repo: Path) -> None:
    removed = list(store_root(repo).rglob("evidence/policy-*"))
    assert removed
    for path in removed:
        path.unlink()


def test_a_missing_builtin_policy_is_the_builtin_one_and_the_edit_is_reviewed(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    _approve(repo, tmp_path)
    _drop_policy(repo)
    edit_parser(repo, lines=1, start=40)
    trail = _walk(repo, tmp_path, "pre-commit")
    assert trail.ran("recover"), trail.steps  # its hash proves the built-in bytes
    _deliver(repo, tmp_path)


def test_a_missing_custom_policy_is_named_and_a_new_lineage_makes_progress(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"schema": "factory.review-policy/1", "golden_globs": ["g/*"]}))
    edit_parser(repo, lines=2)
    started = review("start", "--policy", str(policy), cwd=repo)
    assert started.code == 0, started.stderr
    Driver(repo, tmp_path / "first", "pre-commit").drive()  # approved through finalize
    _drop_policy(repo)
    edit_parser(repo, lines=1, start=40)
    trail = _walk(repo, tmp_path, "pre-commit")
    codes = [c for _, c in trail.steps]
    assert trail.ran("recover") and trail.ran("start") and 2 in codes, trail.steps
    assert trail.last is not None


def test_twin_a_missing_policy_never_allows_the_unreviewed_edit(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _approve(repo, tmp_path)
    _drop_policy(repo)
    edit_parser(repo, lines=1, start=40)
    first = Driver(repo, tmp_path / "in", "pre-commit").ask()
    assert not first.doc["allowed"]


def test_status_on_a_healthy_store_names_a_next_command(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert review("status", cwd=repo).doc["next"] == ["factory review start"]
    _approve(repo, tmp_path)
    assert review("status", cwd=repo).doc["next"] == ["factory review validate --gate pre-commit"]


# --- recover and start on a committed candidate


def _recover_argv(repo: Path) -> list[str]:
    (entry,) = review("status", cwd=repo).doc["lineages"]
    return [
        "recover", "--predecessor-lineage", entry["lineage"], "--expected-predecessor-revision",
        entry["store_revision"], "--disposition", "scope_changed", "--reason", "r", "--actor", "a",
    ]  # fmt: skip


def test_recover_right_after_committing_the_approved_tree_is_refused_naming_push(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    _approve(repo, tmp_path)
    commit(repo)
    before = snapshot_bytes(repo)
    ran = review(*_recover_argv(repo), cwd=repo)
    assert ran.code == 2 and ran.doc["error"]["code"] == "review-recover-not-eligible"
    assert ran.doc["next"][0] == "factory review validate --gate pre-push"
    assert snapshot_bytes(repo) == before  # the valid approval is not superseded
    started = review("start", cwd=repo)  # nor is an empty lineage built
    assert started.code == 2 and started.doc["error"]["code"] == "review-nothing-to-review"
    base = git(repo, "merge-base", "HEAD", "origin/topic").strip()
    assert started.doc["next"][0] == f"factory review start --base-ref {base}"
    assert snapshot_bytes(repo) == before
    _unchanged(_walk(repo, tmp_path, "pre-push", *PUSH))


def test_twin_recover_after_committing_and_editing_is_accepted_on_the_reviewed_base(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    _approve(repo, tmp_path)
    reviewed_base = git(repo, "rev-parse", "HEAD^{tree}").strip()
    commit(repo)
    edit_parser(repo, lines=1, start=40)
    ran = review(*_recover_argv(repo), cwd=repo)
    assert ran.code == 0, ran.stderr
    assert ran.doc["target"]["base_tree"] == reviewed_base
    assert ran.doc["target"]["kind"] == "base-diff"


def _crlf_checkout(repo: Path) -> None:
    """``core.autocrlf=true`` set before checkout: every text file on disk has CRLF while
    every blob has LF (a Windows-style clone)."""
    git(repo, "config", "core.autocrlf", "true")
    for rel in BASE_FILES:
        (repo / rel).unlink()
    git(repo, "checkout", "--", ".")
    assert b"\r\n" in (repo / "src" / "parser.py").read_bytes()


def test_a_crlf_checkout_reaches_every_gate_by_the_printed_commands(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _crlf_checkout(repo)
    _approve(repo, tmp_path)
    git(repo, "add", "-A")
    _unchanged(_walk(repo, tmp_path, "pre-commit"))
    commit(repo)
    _unchanged(_walk(repo, tmp_path, "pre-push", *PUSH))
    git(repo, "push", "-q", "origin", "HEAD:topic")
    _unchanged(_walk(repo, tmp_path, "pre-pr", *PR))


def test_twin_a_crlf_checkout_with_an_unreviewed_commit_is_denied_first(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _crlf_checkout(repo)
    _approve(repo, tmp_path)
    (repo / "README.md").write_bytes(b"never reviewed\r\n")
    commit(repo)
    _edited(_walk(repo, tmp_path, "pre-push", *PUSH))


# --- the same through git's own hooks (the index the commit is made from is git's lock)


def _hooked_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("name", ["autocrlf-true", "eol-lf-attribute"])
def test_git_commit_and_push_through_the_hooks_in_a_converting_checkout(
    tmp_path: Path, name: str
) -> None:
    repo = _repo(tmp_path)
    assert review("install-hooks", "--cwd", str(repo), cwd=repo).code == 0
    target = CONVERTING[name](repo) if name != "eol-lf-attribute" else None
    if target is None:  # its attributes commit goes through the hook: approve it first
        (repo / ".gitattributes").write_text("*.md text eol=lf\n")
        (tmp_path / "attributes").mkdir()
        approve(repo, tmp_path / "attributes")
        commit(repo, "attributes")
        git(repo, "push", "-q", "origin", "HEAD:topic")
        git(repo, "push", "-q", "origin", "HEAD:main")
        target = repo / "docs" / "windows.md"
    target.write_bytes(CRLF)
    _approve(repo, tmp_path)
    target.write_bytes(CRLF + b"unreviewed\r\n")
    git(repo, "add", "-A")
    denied = _hooked_git(repo, "commit", "-q", "-m", "edited after approval")
    assert denied.returncode != 0 and "DENIED at pre-commit" in denied.stderr  # the twin
    target.write_bytes(CRLF)
    git(repo, "add", "-A")
    allowed = _hooked_git(repo, "commit", "-q", "-m", "the approved candidate")
    assert allowed.returncode == 0, allowed.stderr
    pushed = _hooked_git(repo, "push", "-q", "origin", "HEAD:topic")
    assert pushed.returncode == 0 and "ALLOW at pre-push" in pushed.stderr, pushed.stderr
