"""The mirror's remote git (issue 23 §2): programs the repository's configuration names
never run (with the twin showing plain git would run them), and push/fetch over a real
smart-HTTP remote (``git http-backend`` on loopback)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.review.cli_helpers import review
from tests.review.mirror_support import NS, approve_and_push, branch_of, clone, gate, with_remote
from tests.support.git import git
from tests.support.git_remote import bare_from, serve_http


def _sentinel_program(tmp: Path, name: str) -> tuple[Path, Path]:
    mark = tmp / f"{name}.ran"
    prog = tmp / f"{name}.sh"
    prog.write_text(f"#!/bin/sh\ntouch '{mark}'\nexit 1\n")
    prog.chmod(0o755)
    return prog, mark


def test_repository_configured_programs_never_run_for_push_and_fetch(
    repo: Path, tmp_path: Path
) -> None:
    bare = with_remote(repo, tmp_path)
    approve_and_push(repo, tmp_path)
    marks = []
    for key in ("remote.origin.uploadpack", "remote.origin.receivepack", "core.sshCommand"):
        prog, mark = _sentinel_program(tmp_path, key.replace(".", "-"))
        git(repo, "config", key, str(prog))
        marks.append(mark)
    helper, helper_mark = _sentinel_program(tmp_path, "credential")
    git(repo, "config", "credential.helper", f"!{helper}")
    marks.append(helper_mark)
    pushed = review("push", cwd=repo)
    assert pushed.code == 0, pushed.stderr
    fetched = review("fetch", cwd=repo)
    assert fetched.code == 0, fetched.stderr
    assert [m for m in marks if m.exists()] == []
    # twin: plain git in the same repository runs the configured upload-pack
    plain = git(repo, "fetch", "origin", check=False)
    assert plain == "" and marks[0].exists()
    assert git(bare, "for-each-ref", "--format=%(refname)", NS).strip()


def test_push_and_fetch_over_smart_http(repo: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    bare_from(repo, served / "project.git")
    with serve_http(served) as http:
        git(repo, "remote", "add", "origin", http.url("project.git"))
        lineage = approve_and_push(repo, tmp_path)
        pushed = review("push", cwd=repo)
        assert pushed.code == 0, pushed.stderr
        ci = tmp_path / "ci"
        git(tmp_path, "clone", "-q", "--branch", branch_of(repo), http.url("project.git"), str(ci))
        fetched = review("fetch", cwd=ci)
        assert fetched.code == 0, fetched.stderr
        assert [r["lineage"] for r in fetched.doc["lineages"]] == [lineage]
        posts = [path for method, path, _ in http.requests if method == "POST"]
        assert any(p.endswith("/git-receive-pack") for p in posts)
        assert any(p.endswith("/git-upload-pack") for p in posts)
    allowed = gate(ci, "--from-refs")
    assert allowed.code == 0, allowed.stderr


def test_the_mirror_clone_twin_without_a_push_has_nothing_to_fetch(
    repo: Path, tmp_path: Path
) -> None:
    bare = with_remote(repo, tmp_path)
    approve_and_push(repo, tmp_path)
    ci = clone(bare, tmp_path / "ci", branch_of(repo))
    fetched = review("fetch", cwd=ci)
    assert fetched.code == 0 and fetched.doc["lineages"] == []
    assert gate(ci, "--from-refs").code == 3


def test_a_remote_helper_the_repository_names_never_runs(repo: Path, tmp_path: Path) -> None:
    with_remote(repo, tmp_path)
    approve_and_push(repo, tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    prog, mark = _sentinel_program(tmp_path, "helper")
    (bin_dir / "git-remote-evil").symlink_to(prog)
    git(repo, "config", "remote.origin.vcs", "evil")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for verb in ("push", "fetch"):
        refused = review(verb, cwd=repo, env=env)
        assert refused.code == 4 and "not allowed" in refused.stderr, refused.stderr
    assert not mark.exists()
    # twin: plain git runs the helper the configuration names
    subprocess.run(["git", "fetch", "origin"], cwd=repo, env=env, capture_output=True)
    assert mark.exists()
