"""The agent run's test layout: a real repository with a linked worktree and an output
folder (used by the agent and gate tests; ``tests/agent/conftest.py`` makes it a fixture)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.git import add_linked_worktree, git, init_repo


@dataclass
class Layout:
    repo: Path
    wt: Path
    out: Path

    @property
    def receipt(self) -> Path:
        return self.out / "receipt.json"

    @property
    def evidence(self) -> Path:
        return self.out / "receipt.json.evidence"

    def head(self) -> str:
        return git(self.wt, "rev-parse", "HEAD").strip()

    def index_bytes(self) -> bytes:
        gd = git(self.wt, "rev-parse", "--path-format=absolute", "--git-path", "index").strip()
        return Path(gd).read_bytes()


def make_layout(tmp_path: Path) -> Layout:
    """A repository with one commit, a linked worktree holding an ignored ``node_modules``
    and an ignored log, and an empty output folder."""
    repo = init_repo(
        tmp_path / "repo",
        {
            "README.md": "sample\n",
            "src/app.py": "def add(a, b):\n    return a - b\n",
            ".gitignore": "ignored.log\nnode_modules/\nbuild/\n",
        },
    )
    wt = add_linked_worktree(repo, tmp_path / "wt")
    (wt / "node_modules" / "dep").mkdir(parents=True)
    (wt / "node_modules" / "dep" / "index.js").write_text("module.exports = 1;\n")
    (wt / "ignored.log").write_text("log\n")
    out = tmp_path / "out"
    out.mkdir()
    return Layout(repo, wt, out)
