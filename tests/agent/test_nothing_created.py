"""Nothing is created before a run can start (issue 22; issue 24 §1): every admission check
that can refuse ``factory agent --repo`` — a lock file git left in the common dir, a
provider that could not start on the route — refuses with exit 2 before the worktree, the
branch, the registry record or the receipt exist. Each refusal has a twin that runs.

The provider cases run the real CLI with the real profiles and fake ``claude``/``codex``
executables first on ``PATH`` (``tests/support/fake_cli.py``: a test emulation of the CLIs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.creating_helpers import FAKE
from tests.gitio.helpers import snapshot
from tests.support.cli import run_factory
from tests.support.fake_cli import Fakes, install_fakes
from tests.support.git import git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj", {"src/app.py": "def add(a, b):\n    return a - b\n"})


def _fake_run(repo: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    argv = ["agent", "--timeout-ms", "5000", "--repo", str(repo), "--task", "t", "--out"]
    return subprocess.run(
        [sys.executable, str(FAKE), "approve", "--", *argv, str(out), *extra],
        capture_output=True,
        timeout=120,
        check=False,
    )


def _branches(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/")


# ---- a stale lock in the common dir (issue 24 §1) ---------------------------------------------


@pytest.mark.parametrize(
    ("lock", "code"),
    [
        ("config.lock", "config-locked"),
        ("packed-refs.lock", "ref-locked"),
        ("shallow.lock", "git-locked"),
        ("refs/heads/main.lock", "ref-locked"),
        ("logs/HEAD.lock", "ref-locked"),
    ],
)
def test_a_stale_lock_in_the_common_dir_refuses_before_anything_exists(
    tmp_path: Path, repo: Path, lock: str, code: str
) -> None:
    (repo / ".git" / lock).parent.mkdir(parents=True, exist_ok=True)
    (repo / ".git" / lock).write_bytes(b"")
    out = tmp_path / "r.json"
    before, refs = snapshot(tmp_path), _branches(repo)
    proc = _fake_run(repo, out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert f"factory: {code}: git left a lock file (common-dir/{lock})".encode() in proc.stderr
    assert snapshot(tmp_path) == before  # no folder, no registry record, no receipt
    assert _branches(repo) == refs
    assert "factory-run" not in git(repo, "worktree", "list")

    # Twin: the lock gone, the same command creates the worktree and completes.
    (repo / ".git" / lock).unlink()
    ok = _fake_run(repo, out)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(out.read_bytes())["worktree_creation"]["branch"].startswith("factory/run-")


def test_the_primary_checkouts_own_index_lock_is_not_the_new_worktrees(
    tmp_path: Path, repo: Path
) -> None:
    # Twin of the class: the main checkout's own index.lock (a `git add` running there) is
    # that checkout's state, not the one the new worktree shares.
    (repo / ".git" / "index.lock").write_bytes(b"")
    proc = _fake_run(repo, tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr


# ---- provider preflight (issue 22) ------------------------------------------------------------


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    return install_fakes(tmp_path / "fakebin")


def _real_run(
    fakes: Fakes, repo: Path, out: Path, *extra: str
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PATH": f"{fakes.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = ["agent", "--timeout-ms", "20000", "--repo", str(repo), "--task", "t", "--out"]
    return run_factory([*argv, str(out), *extra], env=env)


def _outside_fakes(tmp_path: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("fakebin")}


@pytest.mark.parametrize(
    ("modes", "names"),
    [
        ({"claude": "not-logged-in"}, "claude cannot start on the subscription route"),
        ({"codex": "not-logged-in"}, "codex cannot start on the subscription route"),
    ],
)
def test_a_missing_login_refuses_before_anything_exists(
    tmp_path: Path, repo: Path, fakes: Fakes, modes: dict[str, str], names: str
) -> None:
    fakes.mode(**modes)
    out = tmp_path / "r.json"
    before, refs = _outside_fakes(tmp_path), _branches(repo)
    proc = _real_run(fakes, repo, out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "factory: provider-not-ready: " + names in err
    assert "provider-auth-required" in err and "factory doctor" in err
    assert _outside_fakes(tmp_path) == before and _branches(repo) == refs
    assert not fakes.records("run")  # no provider was started to work

    # Twin: logged in, the same command creates its worktree and runs both providers.
    fakes.mode(claude="ok", codex="ok")
    proc = _real_run(fakes, repo, out)
    assert proc.returncode == 0, proc.stderr
    receipt = json.loads(out.read_bytes())
    assert Path(receipt["worktree_creation"]["path"]).is_dir()
    assert receipt["status"] == "completed"


def test_an_executable_that_cannot_run_refuses_before_anything_exists(
    tmp_path: Path, repo: Path, fakes: Fakes
) -> None:
    # A shell wrapper is refused by the resolver (provider-not-found): it would put an
    # interpreter factory cannot supervise between it and the CLI.
    real = (fakes.bin / "claude").read_bytes()
    (fakes.bin / "claude").write_text("#!/bin/sh\nexec true\n")
    out = tmp_path / "r.json"
    before = _outside_fakes(tmp_path)
    proc = _real_run(fakes, repo, out)
    assert proc.returncode == 2, proc.stderr
    assert b"factory: provider-missing: claude cannot start" in proc.stderr
    assert b"provider-not-found" in proc.stderr and b"factory providers install" in proc.stderr
    assert _outside_fakes(tmp_path) == before

    (fakes.bin / "claude").write_bytes(real)  # twin: the fake CLI itself runs
    assert _real_run(fakes, repo, out).returncode == 0


def test_the_rehearsal_route_needs_no_login(tmp_path: Path, repo: Path, fakes: Fakes) -> None:
    # The preflight asks for a login only on the subscription route: on the rehearsal
    # route the CLIs get private homes and a scripted server's key.
    import trio

    from factory.cli.preflight import _check
    from providers import claude_profile, codex_profile
    from providers.common import Effects

    fakes.mode(claude="not-logged-in", codex="not-logged-in")
    env = {**os.environ, "PATH": f"{fakes.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    fx = Effects(environ=env, fallback_dirs=())
    profiles = (claude_profile(fx), codex_profile(fx))
    trio.run(_check, profiles, "rehearsal")  # passes
    from factory.errors import FactoryError

    with pytest.raises(FactoryError) as refused:
        trio.run(_check, profiles, "subscription")
    assert refused.value.code == "provider-not-ready" and refused.value.exit_code == 2


# ---- uncommitted changes in the checkout of --repo --------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r / "src" / "app.py").write_text("edited, not committed\n"),
        lambda r: (r / "new.txt").write_text("untracked\n"),
        lambda r: (r / "README.staged").write_text("x") or git(r, "add", "README.staged"),
    ],
    ids=["unstaged", "untracked", "staged"],
)
def test_uncommitted_changes_are_named_in_one_stderr_line(
    tmp_path: Path, repo: Path, change: object
) -> None:
    change(repo)  # type: ignore[operator]
    out = tmp_path / "r.json"
    proc = _fake_run(repo / "src", out)
    assert proc.returncode == 0, proc.stderr
    base = git(repo, "rev-parse", "HEAD").strip()
    notes = [ln for ln in proc.stderr.decode().splitlines() if "uncommitted changes" in ln]
    assert notes == [
        "factory agent: the checkout of --repo has uncommitted changes; the run starts from "
        f"the base commit {base[:12]} and they are not part of it"
    ]
    # ... and they are indeed not part of it: the candidate is the worker's change alone.
    files = [
        f["path"] for f in json.loads(out.read_bytes())["candidate"]["initial"]["body"]["files"]
    ]
    assert files == ["src/app.py"]


def test_a_clean_checkout_gets_no_note(tmp_path: Path, repo: Path) -> None:
    proc = _fake_run(repo, tmp_path / "r.json")
    assert proc.returncode == 0 and b"uncommitted" not in proc.stderr
    # nor does a run whose progress is JSON lines (stderr stays JSON only)
    (repo / "new.txt").write_text("untracked\n")
    proc = _fake_run(repo, tmp_path / "r2.json", "--progress", "jsonl")
    assert proc.returncode == 0 and b"uncommitted" not in proc.stderr
    assert all(json.loads(ln) for ln in proc.stderr.splitlines() if ln.strip())
