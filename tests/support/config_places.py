"""Where the factory.toml tests write: a git repository and a private user config folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Places:
    repo: Path
    xdg: Path

    @property
    def env(self) -> dict[str, str]:
        return {"XDG_CONFIG_HOME": str(self.xdg)}

    @property
    def user_file(self) -> Path:
        return self.xdg / "factory" / "factory.toml"

    @property
    def repo_file(self) -> Path:
        return self.repo / "factory.toml"

    def user(self, text: str) -> Path:
        self.user_file.parent.mkdir(parents=True, exist_ok=True)
        self.user_file.write_text(text)
        return self.user_file

    def repository(self, text: str) -> Path:
        self.repo_file.write_text(text)
        return self.repo_file


def make_places(tmp: Path) -> Places:
    from tests.support.git import init_repo

    return Places(repo=init_repo(tmp / "repo", {"README": "x\n"}), xdg=tmp / "xdg")
