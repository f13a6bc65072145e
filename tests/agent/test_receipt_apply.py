"""``factory receipt apply R``: the verified, approved change taken into another checkout
(issue 22). Real repositories (a fresh clone of the run's repository at the base), the
real CLI; every refusal leaves the target untouched and has a twin that applies."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from factory.agent.receipt import AgentReceipt, receipt_bytes
from factory.provider_api import RehearsalRoute
from tests.agent.creating_helpers import FIX, Created, completed
from tests.agent.fakes import Step, write
from tests.gitio.helpers import snapshot
from tests.support.cli import run_factory
from tests.support.git import git

FIXED = "def add(a, b):\n    return a + b\n"


def _clone(run: Created, tmp: Path, name: str = "mine") -> Path:
    """A fresh clone of the run's repository (only reachable objects), at the base."""
    target = tmp / name
    git(tmp, "clone", "-q", f"file://{run.repo}", str(target))
    return target


def _apply(run: Created, target: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    proc = run_factory(["receipt", "apply", str(run.receipt), "--to", str(target), *flags])
    doc = json.loads(proc.stdout) if proc.stdout else {}
    return proc.returncode, doc, proc.stderr.decode()


def _untouched(folder: Path) -> dict[str, str]:
    """Every byte of the checkout but its object database (applying in a private index may
    add objects, never change one)."""
    return {k: v for k, v in snapshot(folder).items() if not k.startswith(".git/objects")}


def _candidate_tree(run: Created) -> str:
    cand = run.outcome.receipt.final_candidate()
    assert cand is not None
    return cand.body.candidate_tree


def test_apply_into_a_fresh_clone_leaves_exactly_the_candidate_staged(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    head = git(target, "rev-parse", "HEAD").strip()
    code, doc, err = _apply(run, target)
    assert code == 0, err
    assert doc["schema"] == "factory.receipt-application/1"
    assert doc["result"] == "staged" and doc["judged_tree"] is True and doc["commit"] is None
    assert doc["tree"] == doc["candidate_tree"] == _candidate_tree(run)
    assert git(target, "write-tree").strip() == _candidate_tree(run)  # the index, by id
    assert (target / "src" / "app.py").read_text() == FIXED  # and the file on disk
    assert git(target, "rev-parse", "HEAD").strip() == head  # nothing committed
    assert git(target, "diff", "--cached", "--name-only").split() == ["src/app.py"]
    assert git(target, "status", "--porcelain").splitlines() == ["M  src/app.py"]
    assert "applied and staged: the judged tree, byte for byte" in err
    assert "nothing was pushed" in err


def test_apply_commit_names_the_revision_with_the_user_as_author(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    base = git(target, "rev-parse", "HEAD").strip()
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada User", "GIT_AUTHOR_EMAIL": "ada@example.invalid"}
    proc = run_factory(
        ["receipt", "apply", str(run.receipt), "--to", str(target), "--commit"], env=env
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    head = git(target, "rev-parse", "HEAD").strip()
    assert doc["result"] == "committed" and doc["commit"] == head
    assert git(target, "rev-parse", "HEAD^{tree}").strip() == _candidate_tree(run)
    assert git(target, "rev-parse", "HEAD^").strip() == base
    assert (
        git(target, "log", "-1", "--format=%an <%ae>").strip() == "Ada User <ada@example.invalid>"
    )
    revision = run.outcome.receipt.revision
    assert f"factory-receipt-revision: {revision}" in git(target, "log", "-1", "--format=%B")
    assert git(target, "status", "--porcelain") == ""  # clean: index and files are the commit
    assert git(target, "symbolic-ref", "HEAD").strip() == "refs/heads/main"  # on its branch


def test_apply_branch_commit_moves_the_checkout_to_a_new_branch(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    base = git(target, "rev-parse", "HEAD").strip()
    code, doc, err = _apply(run, target, "--branch", "take/fix-add", "--commit")
    assert code == 0, err
    assert git(target, "symbolic-ref", "HEAD").strip() == "refs/heads/take/fix-add"
    assert git(target, "rev-parse", "take/fix-add").strip() == doc["commit"]
    assert git(target, "rev-parse", "main").strip() == base  # the old branch stays
    # Refusals of the flag, each before anything is touched; the twin is the run above.
    other = _clone(run, tmp_path, "other")
    git(other, "branch", "taken")
    before = _untouched(other)
    for name, expected in (("taken", "apply-branch-exists"), ("bad..name", "apply-branch-invalid")):
        code, _, err = _apply(run, other, "--branch", name)
        assert code == 2 and f"factory: {expected}:" in err
    assert _untouched(other) == before


def _moved(target: Path, rel: str = "docs.txt", text: str = "unrelated\n") -> None:
    (target / rel).parent.mkdir(parents=True, exist_ok=True)
    (target / rel).write_text(text)
    git(target, "add", rel)
    git(target, "commit", "-q", "-m", "moved on")


def test_a_moved_base_is_refused_then_merged_with_3way(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    _moved(target)
    before = _untouched(target)
    code, _, err = _apply(run, target)
    assert code == 2 and "factory: apply-base-mismatch:" in err and "--3way" in err
    assert _untouched(target) == before

    code, doc, err = _apply(run, target, "--3way")
    assert code == 0, err
    assert doc["judged_tree"] is False and doc["three_way"] is True
    assert doc["tree"] != _candidate_tree(run)
    assert (target / "src" / "app.py").read_text() == FIXED and (target / "docs.txt").exists()
    assert "NOT the judged tree" in err


def test_a_3way_conflict_is_refused_untouched(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    _moved(target, "src/app.py", "def add(a, b):\n    return a * b\n")
    before = _untouched(target)
    code, _, err = _apply(run, target, "--3way")
    assert code == 2 and "factory: apply-conflict:" in err
    assert _untouched(target) == before


def test_a_patch_tampered_in_evidence_is_refused_untouched(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    cand = run.outcome.receipt.final_candidate()
    assert cand is not None
    patch = run.receipt.parent / cand.patch_evidence.path
    data = patch.read_bytes()
    patch.chmod(0o600)
    patch.write_bytes(data.replace(b"+    return a + b", b"+    return a ^ b"))
    before = _untouched(target)
    code, _, err = _apply(run, target)
    assert code == 2 and "factory: apply-receipt-not-verified:" in err
    assert "digest-mismatch" in err
    assert _untouched(target) == before
    patch.write_bytes(data)  # twin: the evidence as bound
    assert _apply(run, target)[0] == 0


def test_a_consistent_forgery_whose_patch_misses_the_tree_is_refused(tmp_path: Path) -> None:
    # The patch evidence is replaced AND the receipt re-closed around it (a same-user actor
    # can): every hash matches, the run's worktree is gone (so verify cannot replay it) —
    # apply's own proof still refuses a patch that does not make the candidate tree.
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    shutil.rmtree(run.wt)
    r = run.outcome.receipt
    cand = r.final_candidate()
    assert cand is not None
    old = run.receipt.parent / cand.patch_evidence.path
    data = old.read_bytes().replace(b"+    return a + b", b"+    return a ^ b")
    from factory.documents.canonical import sha256_hex

    sha = sha256_hex(data)
    new = old.with_name(f"{cand.patch_evidence.role}-{sha}")
    new.write_bytes(data)
    where = os.path.relpath(new, run.receipt.parent)
    ref = cand.patch_evidence.model_copy(update={"path": where, "sha256": sha})
    forged_cand = cand.model_copy(update={"patch_evidence": ref})
    key = "repaired" if r.candidate.repaired else "initial"
    forged = r.model_copy(update={"candidate": r.candidate.model_copy(update={key: forged_cand})})
    run.receipt.write_bytes(
        receipt_bytes(AgentReceipt.model_validate(forged.closed().to_json_value()))
    )
    assert run.verify()[0] == 0  # it verifies: only the apply's proof can tell
    before = _untouched(target)
    code, _, err = _apply(run, target)
    assert code == 2 and "factory: apply-patch-does-not-reproduce:" in err, err
    assert _untouched(target) == before


@pytest.mark.parametrize(
    ("dirty", "code"),
    [
        (lambda t: (t / "src" / "app.py").write_text("mine\n"), 2),
        (lambda t: [(t / "README.md").write_text("x"), git(t, "add", "README.md")], 2),
        (lambda t: (t / "src" / "app.py").unlink() or (t / "src" / "app.py").mkdir(), 2),
        (lambda t: (t / "scratch.txt").write_text("untracked, elsewhere\n"), 0),
    ],
    ids=["unstaged", "staged", "replaced-by-folder", "untracked-elsewhere"],
)
def test_a_dirty_target_is_refused_untouched(tmp_path: Path, dirty: Any, code: int) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    dirty(target)
    before = _untouched(target)
    rc, _, err = _apply(run, target)
    assert rc == code, err
    if code:
        assert "factory: apply-target-dirty:" in err
        assert _untouched(target) == before


def test_an_untracked_file_where_the_change_adds_one_is_refused(tmp_path: Path) -> None:
    run = Created(tmp_path, [Step(effect=write("new/module.py", "x = 1\n"))], [Step()])
    target = _clone(run, tmp_path)
    (target / "new").mkdir()
    (target / "new" / "module.py").write_text("my own\n")
    before = _untouched(target)
    code, _, err = _apply(run, target)
    assert code == 2 and "untracked file" in err
    assert _untouched(target) == before
    (target / "new" / "module.py").unlink()  # twin
    assert _apply(run, target)[0] == 0
    assert (target / "new" / "module.py").read_text() == "x = 1\n"


def test_only_an_approved_receipt_is_applied(tmp_path: Path) -> None:
    run = Created(
        tmp_path,
        [Step(effect=FIX), Step(effect=write("t.py", "x\n"))],
        [Step(verdict="REQUEST_CHANGES"), Step(verdict="REQUEST_CHANGES")],
    )
    assert run.outcome.receipt.status == "rejected"
    target = _clone(run, tmp_path)
    before = _untouched(target)
    code, _, err = _apply(run, target)
    assert code == 2 and "factory: apply-receipt-not-approved:" in err
    assert _untouched(target) == before


def test_a_target_that_is_no_checkout_is_refused(tmp_path: Path) -> None:
    run = completed(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(run.repo), str(bare))
    for where in (plain, bare, tmp_path / "absent"):
        code, _, err = _apply(run, where)
        assert code == 2 and "factory: apply-target-not-a-checkout:" in err, where


def test_a_target_in_the_middle_of_a_merge_is_refused(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    (target / ".git" / "index.lock").write_bytes(b"")
    code, _, err = _apply(run, target)
    assert code == 2 and "factory: apply-target-busy:" in err
    (target / ".git" / "index.lock").unlink()
    assert _apply(run, target)[0] == 0


def test_a_rehearsal_receipt_applies_and_says_so(tmp_path: Path) -> None:
    route = RehearsalRoute(base_url="http://127.0.0.1:9", api_key="k", config_root=tmp_path / "r")
    run = Created(tmp_path, [Step(effect=FIX)], [Step()], route=route)
    assert run.outcome.receipt.route == "rehearsal"
    target = _clone(run, tmp_path)
    code, doc, err = _apply(run, target, "--commit")
    assert code == 0, err
    assert doc["rehearsal"] is True and "REHEARSAL" in doc["note"]
    assert "factory: this change comes from a REHEARSAL: a scripted loopback model" in err
    assert err.count("REHEARSAL") == 1  # said once, not "REHEARSAL: a REHEARSAL's change"
    assert "scripted loopback model" in git(target, "log", "-1", "--format=%B")


def test_apply_runs_no_repository_program(tmp_path: Path) -> None:
    run = completed(tmp_path)
    target = _clone(run, tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    (target / ".git" / "info").mkdir(exist_ok=True)
    (target / ".git" / "info" / "attributes").write_text("*.py filter=trap\n")
    git(target, "config", "filter.trap.smudge", f"sh -c 'touch {marks}/smudge; cat'")
    git(target, "config", "filter.trap.clean", f"sh -c 'touch {marks}/clean; cat'")
    git(target, "config", "filter.trap.required", "true")
    hooks = target / "hooks"
    hooks.mkdir()
    for hook in ("reference-transaction", "post-commit", "pre-commit", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marks}/{hook}\n")
        (hooks / hook).chmod(0o755)
    git(target, "config", "core.hooksPath", str(hooks))
    code, _, err = _apply(run, target, "--commit", "--branch", "taken")
    assert code == 0, err
    assert sorted(p.name for p in marks.iterdir()) == []
    # Twin: git itself, asked plainly, runs them.
    git(target, "branch", "plain")
    git(target, "checkout", "-q", "HEAD~1", "--", "src/app.py")
    assert {"reference-transaction", "smudge"} <= {p.name for p in marks.iterdir()}


def test_help_answers() -> None:
    proc = run_factory(["receipt", "apply", "--help"])
    assert proc.returncode == 0
    for words in (b"--3way", b"--commit", b"--branch", b"Nothing is pushed"):
        assert words in proc.stdout
