"""``factory operator run`` asks the providers before any prompt or grant (issue 22): a CLI
without a login refuses the run with exit 2 — no prompt, no grant spent, no worktree, no
forge request. Fake provider CLIs on PATH (a test emulation); the twin, logged in, reaches
the prompt (``tests/operator/test_cli_pty.py`` runs it to the end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.operator.helpers import REPO, TOKEN, env_with, make_keys
from tests.operator.pty import REV_PROMPT, Screen
from tests.support.cli import run_factory
from tests.support.fake_cli import install_fakes
from tests.support.forge import LoopbackForge
from tests.support.git import git, init_repo


@pytest.mark.parametrize("who", ["claude", "codex"])
def test_a_provider_without_login_refuses_before_the_prompt(
    tmp_path: Path, forge: LoopbackForge, who: str
) -> None:
    repo = init_repo(tmp_path / "repo", {"README.md": "sample\n"})
    private, public = make_keys(tmp_path / "keys")
    fakes = install_fakes(tmp_path / "fakebin")
    fakes.mode(**{who: "not-logged-in"})
    forge.state.add_issue(REPO, 12, "Fix the widget")
    out = tmp_path / "run.json"
    args = [
        "operator", "run", "--repository", REPO, "--forge-url", forge.url,
        "--repo", str(repo), "--private-key", str(private), "--public-key", str(public),
        "--ledger", str(tmp_path / "ledger"), "--out", str(out), "--timeout-ms", "20000",
    ]  # fmt: skip
    before = git(repo, "worktree", "list", "--porcelain")
    env = env_with(fakes, GH_TOKEN=TOKEN)
    proc = run_factory(args, env=env)
    assert proc.returncode == 2, proc.stderr
    assert f"factory: provider-not-ready: {who} cannot start".encode() in proc.stderr
    assert not out.exists() and not (tmp_path / "ledger").exists()
    assert forge.state.requests == [] and fakes.records("run") == []
    assert git(repo, "worktree", "list", "--porcelain") == before

    fakes.mode()  # twin: logged in, the run reaches the operator's prompt
    screen = Screen(args, env)
    screen.expect(REV_PROMPT)
    screen.child.sendcontrol("c")
    screen.finish()
