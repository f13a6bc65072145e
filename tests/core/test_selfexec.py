"""factory never runs code chosen by the current folder (issue 24 §2): every way factory
starts itself is an isolated interpreter, so a planted top-level ``factory/`` package in
the folder it runs in — or in a repository where a git hook or the review gate runs — is
never imported. Each case has its twin: the same words without ``-I`` do run the plant."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import trio

from factory.selfexec import factory_argv
from tests.support.git import git, init_repo

ROOT = Path(__file__).resolve().parents[2]
PLANT = "from pathlib import Path\nPath({marker!r}).write_text('planted code ran')\n"


def plant(folder: Path, marker: Path) -> None:
    pkg = folder / "factory"
    pkg.mkdir(parents=True)
    for name in ("__init__.py", "__main__.py"):
        (pkg / name).write_text(PLANT.format(marker=str(marker)))


def test_the_plant_runs_without_isolation_and_never_with_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plant(tmp_path / "here", marker)
    ok = subprocess.run([*factory_argv("--version")], cwd=tmp_path / "here", capture_output=True)
    assert ok.returncode == 0 and b"factory" in ok.stdout and not marker.exists()
    subprocess.run([sys.executable, "-m", "factory", "--version"], cwd=tmp_path / "here",
                   capture_output=True, check=False)  # fmt: skip
    assert marker.exists()  # the twin: plain 'python -m factory' imports the plant


def test_the_review_gate_provider_never_runs_the_repositorys_code(tmp_path: Path) -> None:
    """The review check runs in-process (issue 25): nothing of the repository is imported."""
    from factory.gate.providers.review_gate import default_runner

    marker = tmp_path / "ran"
    repo = init_repo(tmp_path / "repo")
    plant(repo, marker)
    result = trio.run(default_runner, "pre-commit", repo)
    assert result.schema_id == "factory.review-gate-result/1" and not marker.exists()


def test_installed_hooks_run_factory_isolated(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    repo = init_repo(tmp_path / "repo")
    plant(repo, marker)
    done = subprocess.run(factory_argv("review", "install-hooks", "--cwd", str(repo)),
                          capture_output=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (repo / "x.txt").write_text("x\n")
    git(repo, "add", "x.txt")
    subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=repo, capture_output=True, check=False)
    hook = (repo / ".git" / "hooks" / "pre-commit").read_text()
    assert " -I -m factory review validate" in hook and not marker.exists()


def test_no_module_spawns_factory_another_way() -> None:
    """An AST scan: the words ``-m factory`` appear only in factory.selfexec (and in text
    that carries ``-I`` before them)."""
    offenders = []
    for path in sorted((ROOT / "factory").rglob("*.py")):
        if path.name == "selfexec.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.List | ast.Tuple):
                words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
                if any(words[i : i + 2] == ["-m", "factory"] for i in range(len(words))):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.JoinedStr):
                text = "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
                if "-m factory" in text and "-I -m factory" not in text:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_smoke_from_a_folder_holding_a_factory_package(tmp_path: Path) -> None:
    """Observed before: ImportError, exit 4 — the bus server imported the folder's package."""
    marker = tmp_path / "ran"
    here = tmp_path / "here"
    plant(here, marker)
    (here / "artifact.txt").write_text("an artifact\n")
    argv = factory_argv("smoke", "--data-dir", "bus", "--artifact", "artifact.txt")
    done = subprocess.run([*argv, "--out", "report.json"], cwd=here, capture_output=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not marker.exists()
