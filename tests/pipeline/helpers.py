"""A pipeline world: a repository whose own check script is its test suite, a linked
worktree, an agent receipt from a real ``factory agent`` run on the subscription route
(fake provider CLIs first on PATH, writing the files a test chooses), a bare remote over
``git http-backend``, the loopback forge emulation, a key pair and a gate store."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.operator.helpers import REPO, TOKEN, World, env_with, make_keys
from tests.support.cli import run_factory
from tests.support.fake_cli import install_fakes
from tests.support.forge import LoopbackForge
from tests.support.git import add_linked_worktree, git, init_repo
from tests.support.git_remote import HttpRemote, bare_from

#: Per provider invocation: generous, so a loaded machine slows a fake CLI without failing it.
TIMEOUT_MS = "120000"
# The repository's tests: src/app.py must define answer() == 42.
CHECK = (
    "import runpy, sys\n"
    "ns = runpy.run_path('src/app.py')\n"
    "sys.exit(0 if ns['answer']() == 42 else 1)\n"
)
APP = "def answer():\n    return 42\n"
BASE = {"README.md": "sample\n", "src/app.py": APP, "check.py": CHECK}
# medium risk (a source file), the tests pass:
FIXED = {"src/app.py": APP + "\n\ndef double(x):\n    return 2 * x\n"}
WRONG = {"src/app.py": "def answer():\n    return 41\n"}  # the tests fail on it
DOCS = {"docs/notes.md": "# Notes\n\nanswer() should return 42.\n"}  # low risk: docs only
TEST_ARGV = [sys.executable, "-B", "check.py"]


def store(world: World) -> Path:
    """The world's gate store."""
    return world.tmp / "gate.sqlite3"


def cli_env(world: World, **extra: str) -> dict[str, str]:
    return env_with(world.fakes, GH_TOKEN=TOKEN, FACTORY_STATE_DIR=str(world.tmp), **extra)


def publish_args(world: World, out: Path, *extra: str, test: list[str] | None = None) -> list[str]:
    """``factory publish`` for the world's receipt (the test command last)."""
    argv = TEST_ARGV if test is None else test
    return [
        "publish", "--receipt", str(world.agent_receipt), "--repository", REPO,
        "--remote", "origin", "--forge-url", world.forge.url,
        "--private-key", str(world.private), "--public-key", str(world.public),
        "--ledger", str(world.ledger), "--out", str(out), "--store", str(store(world)),
        *extra, "--test", "--", *argv,
    ]  # fmt: skip


def make_world(
    tmp: Path,
    forge: LoopbackForge,
    remote: HttpRemote,
    edits: dict[str, str],
    name: str = "w",
    *,
    codex: str = "ok",
    canned: str | None = None,
    expect: int = 0,
) -> World:
    """Everything up to an agent receipt whose worker wrote ``edits`` (completed, unless
    the fake reviewer answers ``canned`` and the run ends with exit ``expect``)."""
    root = tmp / name
    repo = init_repo(root / "repo", BASE)
    git(repo, "config", "user.name", "Ada Operator")
    git(repo, "config", "user.email", "ada@factory.invalid")
    remotes = remote.root
    bare = bare_from(repo, remotes / f"{name}.git")
    git(repo, "remote", "add", "origin", remote.url(f"{name}.git"))
    wt = add_linked_worktree(repo, root / "wt")
    fakes = install_fakes(root / "fakebin")
    if canned is not None:
        (fakes.bin / "canned.txt").write_text(canned)
    fakes.mode(claude="ok", codex=codex, claude_files=edits)
    (root / "out").mkdir()
    receipt = root / "out" / "agent.json"
    proc = run_factory(
        ["agent", "--worktree", str(wt), "--task", "make answer() return 42",
         "--out", str(receipt), "--timeout-ms", TIMEOUT_MS],
        env=env_with(fakes), timeout=600,
    )  # fmt: skip
    assert proc.returncode == expect, proc.stderr.decode()
    forge.state.repo(REPO).git_remote = bare
    private, public = make_keys(root / "keys")
    return World(root, repo, wt, bare, forge, fakes, private, public, root / "ledger", receipt)
