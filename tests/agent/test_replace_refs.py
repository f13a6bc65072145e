"""Object substitution never steers an agent run (issue 24 §1).

A ``refs/replace/*`` ref swaps the base commit for one whose ``src/app.py`` holds other
bytes. ``factory agent --repo`` (rehearsal fakes) must check out, approve and record the
base commit's own tree, and list only the change the worker made. Twin: plain git reads
the substituted commit, so the plant was live.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agent.creating_helpers import FAKE
from tests.support.git import git, init_repo


def fake_cli(scenario: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``factory agent ARGS`` with the scripted fake profiles (tests/agent/fake_factory.py)."""
    return subprocess.run(
        [sys.executable, str(FAKE), scenario, "--", "agent", "--timeout-ms", "5000", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )


BASE_APP = "def add(a, b):\n    return a - b\n"


def _identities(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found = [value] if value.get("schema") == "factory.candidate-identity/1" else []
        return found + [x for v in value.values() for x in _identities(v)]
    if isinstance(value, list):
        return [x for v in value for x in _identities(v)]
    return []


def test_a_replace_ref_on_the_base_changes_nothing_factory_reads(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "proj", {"src/app.py": BASE_APP, "README.md": "r\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    base_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    (repo / "README.md").write_text("planted\n")
    git(repo, "commit", "-qam", "other")
    other = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "reset", "-q", "--hard", base)
    git(repo, "replace", base, other)
    assert "planted" in git(repo, "show", f"{base}:README.md")  # twin: the plant is live
    out, wt = tmp_path / "r.json", tmp_path / "wt"
    proc = fake_cli(
        "approve", "--repo", str(repo), "--worktree-dir", str(wt), "--branch", "",
        "--base", base, "--task", "fix add()", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (wt / "README.md").read_text() == "r\n"
    ids = _identities(json.loads(out.read_bytes()))
    assert ids
    for ident in ids:
        assert ident["base_commit"] == base and ident["base_tree"] == base_tree
        assert [f["path"] for f in ident["files"]] == ["src/app.py"]
