"""A publishing world for operator tests: a repository with a linked worktree, an agent
receipt from a real ``factory agent`` run (fake provider CLIs first on PATH), a bare remote
over ``git http-backend`` or ``file://``, the loopback forge emulation, and a key pair."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factory.operator import keys
from factory.operator.forge_client import Forge
from factory.operator.ledger import open_ledger
from factory.operator.session import Authority
from factory.operator.tty import PromptClosed
from tests.support.cli import run_factory
from tests.support.fake_cli import Fakes, install_fakes
from tests.support.forge import LoopbackForge
from tests.support.git import add_linked_worktree, git, init_repo
from tests.support.git_remote import HttpRemote, bare_from, remote_state

REPO = "octo/widgets"
PASSPHRASE = b"correct horse battery staple"
TOKEN = "forge-test-token"
_REVISION = re.compile(r"intent revision: (sha256:[0-9a-f]{64})")


def env_with(fakes: Fakes, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{fakes.bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env.update(extra)
    return env


@dataclass
class World:
    tmp: Path
    repo: Path
    wt: Path
    bare: Path
    forge: LoopbackForge
    fakes: Fakes
    private: Path
    public: Path
    ledger: Path
    agent_receipt: Path

    def out(self, name: str = "op.json") -> Path:
        return self.tmp / "out" / name

    def state(self) -> dict[str, Any]:
        """Remote, forge and worktree (status, HEAD, index bytes, every branch)."""
        index = git(self.wt, "rev-parse", "--path-format=absolute", "--git-path", "index")
        return {
            "remote": remote_state(self.bare),
            "forge": self.forge.state.snapshot(),
            "status": git(self.wt, "status", "--porcelain=v2", "-z", "--untracked-files=all"),
            "head": git(self.wt, "rev-parse", "HEAD"),
            "index": Path(index.strip()).read_bytes(),
            "branches": git(self.repo, "for-each-ref", "refs/heads"),
        }

    def authority(self, **kw: Any) -> Authority:
        public = keys.load_public(self.public)
        return Authority(
            keys.read_private(self.private),
            public,
            open_ledger(self.ledger),
            kw.pop("ttl_s", 120),
            **kw,
        )

    def client(self) -> Forge:
        return Forge(self.forge.url, TOKEN)


def make_keys(folder: Path, iterations: int = 1000) -> tuple[Path, Path]:
    """A key pair (a low KDF cost: these tests are about the flow, not the KDF)."""
    folder.mkdir(parents=True, exist_ok=True)
    pair = keys.KeyPair(folder / "op.key", folder / "op.pub")
    keys.generate(pair, PASSPHRASE, iterations=iterations)
    return pair.private, pair.public


def make_world(tmp: Path, forge: LoopbackForge, remote: HttpRemote | None) -> World:
    """Everything up to a completed, verified agent receipt; nothing published yet."""
    repo = init_repo(tmp / "repo", {"README.md": "sample\n", "src/app.py": "x = 1\n"})
    git(repo, "config", "user.name", "Ada Operator")
    git(repo, "config", "user.email", "ada@factory.invalid")
    remotes = tmp / "remotes"
    remotes.mkdir(exist_ok=True)
    bare = bare_from(repo, remotes / "widgets.git")
    url = remote.url("widgets.git") if remote is not None else bare.as_uri()
    git(repo, "remote", "add", "origin", url)
    wt = add_linked_worktree(repo, tmp / "wt")
    fakes = install_fakes(tmp / "fakebin")
    (tmp / "out").mkdir()
    receipt = tmp / "out" / "agent.json"
    proc = run_factory(
        [
            "agent",
            "--worktree",
            str(wt),
            "--task",
            "fix it",
            "--out",
            str(receipt),
            "--timeout-ms",
            "20000",
        ],
        env=env_with(fakes),
    )
    assert proc.returncode == 0, proc.stderr.decode()
    forge.state.repo(REPO).git_remote = bare
    private, public = make_keys(tmp / "keys")
    return World(tmp, repo, wt, bare, forge, fakes, private, public, tmp / "ledger", receipt)


def revision_on(screen: str) -> str:
    found: list[str] = _REVISION.findall(screen)
    assert found, screen
    return found[-1]


@dataclass
class ScriptedTerminal:
    """An operator who reads the screen and answers. ``revision`` maps the revision shown to
    what is typed; ``passphrase`` is typed at the hidden prompt; ``before_secret`` runs while
    the operator is at the passphrase prompt (to change the world meanwhile)."""

    revision: Callable[[str], str | BaseException] = lambda shown: shown
    passphrase: bytes | BaseException = PASSPHRASE
    before_secret: Callable[[], None] | None = None
    screen: list[str] = field(default_factory=list)

    def write(self, text: str) -> None:
        self.screen.append(text)

    def read_line(self, prompt: str) -> str:
        self.screen.append(prompt)
        answer = self.revision(revision_on("".join(self.screen)))
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def read_secret(self, prompt: str) -> bytes:
        self.screen.append(prompt)
        if self.before_secret is not None:
            self.before_secret()
        if isinstance(self.passphrase, BaseException):
            raise self.passphrase
        return self.passphrase


CLOSED = PromptClosed()


def receipt_json(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_bytes())
    return value


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True)
