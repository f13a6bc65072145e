"""The repository's ``.pre-commit-config.yaml`` through the real pre-commit framework
(issue 10 §7): a clean tree passes every hook, each kind of fault fails exactly its own
hook, and an installed hook stops a real ``git commit``.

The trees are small repositories that hold the checkout's own ``.pre-commit-config.yaml``
and ``pyproject.toml`` (the ruff and mypy settings) and a ``.venv`` link to the checkout's
environment, the one the hooks name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.git import git

REPO = Path(__file__).resolve().parents[2]
PRE_COMMIT = REPO / ".venv" / "bin" / "pre-commit"
HOOKS = ("ruff format --check", "ruff check", "mypy --strict (the files pyproject.toml names)")
CLEAN = '"""A clean module."""\n\n\ndef double(x: int) -> int:\n    return 2 * x\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for folder in ("factory", "providers", "tests", "scripts"):
        (root / folder).mkdir(parents=True)
        (root / folder / ("ok.py" if folder == "scripts" else "__init__.py")).write_text(CLEAN)
    shutil.copy(REPO / ".pre-commit-config.yaml", root)
    shutil.copy(REPO / "pyproject.toml", root)
    (root / ".venv").symlink_to(REPO / ".venv")
    (root / ".gitignore").write_text(".venv\n.mypy_cache/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    return root


def _env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"),
        "PATH": f"{REPO / '.venv' / 'bin'}:/usr/bin:/bin",
    }


def _run_all(root: Path) -> tuple[int, dict[str, str]]:
    proc = subprocess.run(
        [str(PRE_COMMIT), "run", "--all-files", "--color", "never"],
        cwd=root,
        env=_env(root.parent),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    verdicts = dict(re.findall(r"^(.+?)\.{3,}(Passed|Failed)$", proc.stdout, re.MULTILINE))
    return proc.returncode, verdicts


def test_a_clean_tree_passes_every_hook(tree: Path) -> None:
    rc, verdicts = _run_all(tree)
    assert (rc, verdicts) == (0, dict.fromkeys(HOOKS, "Passed"))


@pytest.mark.parametrize(
    ("text", "hook"),
    [
        ('"""Badly formatted."""\n\nx  =  1\n', "ruff format --check"),
        ('"""Unused import."""\n\nimport os\n', "ruff check"),
        ('"""Untyped."""\n\n\ndef f(x):\n    return x\n', HOOKS[2]),
    ],
    ids=["format", "lint", "types"],
)
def test_each_fault_fails_its_own_hook(tree: Path, text: str, hook: str) -> None:
    (tree / "factory" / "bad.py").write_text(text)
    git(tree, "add", "-A")
    rc, verdicts = _run_all(tree)
    assert rc == 1
    assert verdicts == {h: "Failed" if h == hook else "Passed" for h in HOOKS}
    assert (tree / "factory" / "bad.py").read_text() == text  # checked, never rewritten


def test_an_installed_hook_stops_a_commit_until_the_fault_is_fixed(tree: Path) -> None:
    env = _env(tree.parent)
    subprocess.run([str(PRE_COMMIT), "install"], cwd=tree, env=env, check=True, timeout=120)
    (tree / "providers" / "bad.py").write_text('"""Unused import."""\n\nimport os\n')
    git(tree, "add", "-A")
    commit = ["git", "commit", "-q", "-m", "first"]
    refused = subprocess.run(commit, cwd=tree, env=env, capture_output=True, timeout=600)
    assert refused.returncode != 0
    assert b"ruff check" in refused.stdout + refused.stderr
    assert git(tree, "rev-list", "--all") == ""  # nothing was committed
    (tree / "providers" / "bad.py").write_text(CLEAN)
    git(tree, "add", "-A")
    done = subprocess.run(commit, cwd=tree, env=env, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(tree, "rev-list", "--count", "HEAD").strip() == "1"


def test_the_whole_check_runs_the_same_hooks() -> None:
    """scripts/test runs the hooks through the framework, not a second list of its own."""
    lines = (REPO / "scripts" / "test").read_text().splitlines()
    commands = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert "pre-commit run --all-files --color never" in commands
    assert not [line for line in commands if re.search(r"^\s*(ruff|mypy)\b", line)]
