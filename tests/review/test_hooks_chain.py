"""A hook factory does not own (issue 13): ``install-hooks`` keeps it byte-for-byte (moved
aside, digest recorded as ``previous_sha256``) and chains it after factory's gate, so both
run and the gate can still deny; ``--uninstall`` puts back the original bytes and mode; a
chained hook edited after install is left alone and reported. Real git, real hooks."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from factory.gitio.discover import discover
from factory.review import hooks as hooks_mod
from factory.review.hooks import MARKER
from tests.review.cli_helpers import review
from tests.review.gates_support import approve
from tests.support.git import git

GUIDE = "docs/guide.md"
# No trailing newline, a CR and an odd mode: what is restored must be these exact bytes.
FOREIGN_COMMIT = (
    b'#!/bin/sh\n# mine\r\necho "ran $#" >> "$(git rev-parse --git-dir)/foreign-ran"\nexit 0'
)
FOREIGN_PUSH = b'#!/bin/sh\n{ echo "args: $1 $2"; cat; } > "$(git rev-parse --git-dir)/push-seen"\n'
REFUSING = b"#!/bin/sh\necho 'the foreign hook says no' >&2\nexit 1\n"


def _hooks(repo: Path) -> Path:
    path = repo / ".git" / "hooks"
    path.mkdir(exist_ok=True)
    return path


def _put(repo: Path, name: str, data: bytes, mode: int = 0o750) -> Path:
    path = _hooks(repo) / name
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def _listing(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        n: (stat.S_IMODE(os.lstat(folder / n).st_mode), (folder / n).read_bytes())
        for n in sorted(os.listdir(folder))
    }


def _manifest(repo: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((repo / ".git" / "factory" / "review" / "hooks.json").read_bytes())
    hooks: dict[str, dict[str, object]] = doc["hooks"]
    return hooks


def _install(repo: Path, *extra: str) -> dict[str, Any]:
    ran = review("install-hooks", "--cwd", str(repo), *extra, cwd=repo)
    assert ran.code == 0, ran.stderr
    doc: dict[str, Any] = ran.doc
    return doc


def test_a_foreign_hook_is_kept_byte_for_byte_and_still_runs_after_the_gate(
    repo: Path, tmp_path: Path
) -> None:
    hooks = _hooks(repo)
    _put(repo, "pre-commit", FOREIGN_COMMIT)
    before = _listing(hooks)
    doc = _install(repo)
    assert [h["action"] for h in doc["hooks"]] == ["chain", "install"]
    aside = hooks / "pre-commit.factory-previous"
    assert aside.read_bytes() == FOREIGN_COMMIT
    assert stat.S_IMODE(aside.stat().st_mode) == 0o750
    rec = _manifest(repo)["pre-commit"]
    assert rec["previous_sha256"] == hashlib.sha256(FOREIGN_COMMIT).hexdigest()
    assert rec["previous_mode"] == 0o750 and rec["previous_path"] == str(aside)
    assert _manifest(repo)["pre-push"]["previous_sha256"] is None  # nothing was there
    assert _install(repo)["left_alone"] == 0  # a rerun changes nothing
    assert aside.read_bytes() == FOREIGN_COMMIT
    ran = repo / ".git" / "foreign-ran"
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    (repo / GUIDE).write_text("# guide\n\nreviewed words, then edited\n")
    git(repo, "add", "-A")
    denied = _git_run(repo, "commit", "-q", "-m", "edited after approval")
    assert denied.returncode != 0 and "DENIED at pre-commit" in denied.stderr
    assert not ran.exists()  # the gate denied first: the foreign hook never ran
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    git(repo, "add", "-A")
    allowed = _git_run(repo, "commit", "-q", "-m", "the approved candidate")
    assert allowed.returncode == 0, allowed.stderr
    assert ran.read_text() == "ran 0\n"  # the gate allowed, then the foreign hook ran
    gone = review("install-hooks", "--cwd", str(repo), "--uninstall", cwd=repo)
    assert [h["action"] for h in gone.doc["hooks"]] == ["restored", "removed"]
    assert _listing(hooks) == before  # the original bytes and mode, nothing else
    assert _manifest(repo) == {}


def test_a_refusing_foreign_hook_still_refuses_the_commit_the_gate_allows(
    repo: Path, tmp_path: Path
) -> None:
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    _put(repo, "pre-commit", REFUSING, 0o755)
    _install(repo)
    git(repo, "add", "-A")
    refused = _git_run(repo, "commit", "-q", "-m", "the approved candidate")
    assert refused.returncode != 0 and "the foreign hook says no" in refused.stderr
    (_hooks(repo) / "pre-commit.factory-previous").chmod(0o644)  # git's rule: not executable
    allowed = _git_run(repo, "commit", "-q", "-m", "the approved candidate")
    assert allowed.returncode == 0, allowed.stderr


def test_a_chained_pre_push_hook_gets_the_same_arguments_and_input(
    repo: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "--no-verify", "origin", "main")
    _put(repo, "pre-push", FOREIGN_PUSH, 0o700)
    _install(repo)
    (repo / GUIDE).write_text("# guide\n\npushed words\n")
    approve(repo, tmp_path)
    git(repo, "add", "-A")
    assert _git_run(repo, "commit", "-q", "-m", "reviewed").returncode == 0
    head = git(repo, "rev-parse", "HEAD").strip()
    base = git(bare, "rev-parse", "main").strip()
    pushed = _git_run(repo, "push", "-q", "origin", "main")
    assert pushed.returncode == 0, pushed.stderr
    assert "ALLOW at pre-push" in pushed.stderr
    seen = (repo / ".git" / "push-seen").read_text()
    assert seen == f"args: origin {bare}\nrefs/heads/main {head} refs/heads/main {base}\n"
    (repo / GUIDE).write_text("# guide\n\nunreviewed words\n")
    git(repo, "commit", "-q", "--no-verify", "-am", "not reviewed")
    (repo / ".git" / "push-seen").unlink()
    denied = _git_run(repo, "push", "-q", "origin", "main")
    assert denied.returncode != 0 and "DENIED at pre-push" in denied.stderr
    assert not (repo / ".git" / "push-seen").exists()
    gone = review("install-hooks", "--cwd", str(repo), "--uninstall", cwd=repo)
    assert gone.code == 0
    assert (_hooks(repo) / "pre-push").read_bytes() == FOREIGN_PUSH
    assert stat.S_IMODE((_hooks(repo) / "pre-push").stat().st_mode) == 0o700


def test_a_chained_hook_edited_after_install_is_left_alone_and_reported(repo: Path) -> None:
    hooks = _hooks(repo)
    _put(repo, "pre-commit", FOREIGN_COMMIT)
    _install(repo)
    edited = (hooks / "pre-commit").read_bytes() + b"echo my addition\n"
    (hooks / "pre-commit").write_bytes(edited)
    again = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert [h["action"] for h in again.doc["hooks"]] == ["left-alone", "already-installed"]
    gone = review("install-hooks", "--cwd", str(repo), "--uninstall", cwd=repo)
    assert [h["action"] for h in gone.doc["hooks"]] == ["left-alone", "removed"]
    assert gone.doc["left_alone"] == 1
    assert "pre-commit.factory-previous" in gone.stderr and "left" in gone.stderr
    assert (hooks / "pre-commit").read_bytes() == edited
    assert (hooks / "pre-commit.factory-previous").read_bytes() == FOREIGN_COMMIT
    assert "pre-commit" in _manifest(repo)  # still factory's record of what to put back


def test_a_symlinked_foreign_hook_is_restored_as_the_same_symlink(repo: Path) -> None:
    target = repo / ".git" / "managed-hook"
    target.write_bytes(b"#!/bin/sh\nexit 0\n")
    target.chmod(0o755)
    (_hooks(repo) / "pre-push").symlink_to(target)
    _install(repo)
    assert os.readlink(_hooks(repo) / "pre-push.factory-previous") == str(target)
    assert review("install-hooks", "--cwd", str(repo), "--uninstall", cwd=repo).code == 0
    assert os.readlink(_hooks(repo) / "pre-push") == str(target)
    assert not (_hooks(repo) / "pre-push.factory-previous").exists()


def test_what_cannot_be_kept_aside_is_refused_and_nothing_is_written(repo: Path) -> None:
    hooks = _hooks(repo)
    (hooks / "pre-commit").mkdir()  # a folder where a hook goes
    ran = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert ran.code == 2 and ran.doc["error"]["code"] == "review-hook-not-owned"
    assert not (hooks / "pre-push").exists()
    (hooks / "pre-commit").rmdir()
    _put(repo, "pre-commit", FOREIGN_COMMIT)
    _put(repo, "pre-commit.factory-previous", b"someone's other file\n")  # aside name taken
    taken = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert taken.code == 2 and "factory-previous exists" in taken.doc["error"]["message"]
    assert (hooks / "pre-commit").read_bytes() == FOREIGN_COMMIT
    assert not (hooks / "pre-push").exists()
    (hooks / "pre-commit.factory-previous").unlink()  # the twin: the name is free again
    assert [h["action"] for h in _install(repo)["hooks"]] == ["chain", "install"]


def test_a_crash_at_either_step_of_install_is_finished_by_a_rerun(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks, wt = _hooks(repo), discover(repo)
    _put(repo, "pre-commit", FOREIGN_COMMIT)
    before = _listing(hooks)

    def crash(*_: object, **__: object) -> None:
        raise OSError("injected crash")

    for step in ("rename", "write_exclusive"):  # before the move, then before the write
        target = os if step == "rename" else hooks_mod
        with monkeypatch.context() as m:
            m.setattr(target, step, crash)
            with pytest.raises(OSError, match="injected"):
                hooks_mod.install(wt)
        assert (hooks / "pre-commit.factory-previous").exists() == (step != "rename")
        report = hooks_mod.install(wt)
        assert report["left_alone"] == 0
        assert (hooks / "pre-commit.factory-previous").read_bytes() == FOREIGN_COMMIT
        assert MARKER.encode() in (hooks / "pre-commit").read_bytes()
        hooks_mod.uninstall(wt)
        assert _listing(hooks) == before
