"""Real repositories for the worktree-creation tests, and ways to look at them."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from tests.support.git import git, init_repo

SAMPLE = {
    "README.md": "sample\n",
    "src/app.py": "def add(a, b):\n    return a - b\n",
    "src/deep/er/x.txt": "deep\n",
    "a-b.txt": "dash sorts before slash\n",
    "a/z.txt": "inside a/\n",
}


def sample_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository with nested folders, an executable, a symlink and a binary file."""
    repo = init_repo(path, files or SAMPLE)
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("src/app.py")
    (repo / "blob.bin").write_bytes(bytes(range(256)) * 4)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    return repo


def blob(repo: Path, oid: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", oid], cwd=repo, capture_output=True, check=True
    ).stdout


def assert_raw_checkout(repo: Path, worktree: Path, commit: str) -> int:
    """Every entry of ``commit``'s tree is in ``worktree`` exactly as its blob; return the
    number of entries checked."""
    out = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-tree", commit],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    count = 0
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, raw = rec.partition(b"\t")
        mode, _kind, oid = meta.decode().split(" ")
        path = os.path.join(os.fsencode(worktree), raw)
        if mode == "160000":
            assert os.path.isdir(path) and not os.listdir(path), raw
        elif mode == "120000":
            assert os.readlink(path) == blob(repo, oid), raw
        else:
            with open(path, "rb") as fh:
                assert fh.read() == blob(repo, oid), raw
            executable = bool(os.stat(path).st_mode & 0o100)
            assert executable == (mode == "100755"), raw
        count += 1
    return count


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: folders, symlink targets, file bytes (hashed)."""
    seen: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                seen[rel] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                seen[rel] = "dir"
            else:
                with open(path, "rb") as fh:
                    seen[rel] = hashlib.sha256(fh.read()).hexdigest()
    return seen


def registrations(common: Path) -> dict[str, str]:
    """The bytes of every other worktree's registration under ``<common>/worktrees``."""
    folder = common / "worktrees"
    return snapshot(folder) if folder.is_dir() else {}


def booby_trapped(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose checkout would run a smudge filter, hooks and fsmonitor (each
    writes a marker) and convert bytes (ident, CRLF, UTF-16) — from the committed
    .gitattributes and from info/attributes, which no git option switches off."""
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = init_repo(
        tmp_path / "proj",
        {
            ".gitattributes": "*.txt filter=trap ident\n",
            "notes.txt": "$Id$\nline two\n",
            "plain.md": "line one\nline two\n",
            "wide.cfg": "caf\u00e9\n",
        },
    )

    def marker(name: str) -> str:
        return f"touch {marks / name}"

    git(repo, "config", "filter.trap.smudge", f"sh -c '{marker('smudge')}; cat'")
    git(repo, "config", "filter.trap.clean", f"sh -c '{marker('clean')}; cat'")
    git(repo, "config", "filter.trap.required", "true")
    git(repo, "config", "core.fsmonitor", f"{repo / '.git' / 'fsmon.sh'}")
    (repo / ".git" / "fsmon.sh").write_text(f"#!/bin/sh\n{marker('fsmonitor')}\n")
    (repo / ".git" / "fsmon.sh").chmod(0o755)
    info = repo / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("*.md text eol=crlf\n*.cfg working-tree-encoding=UTF-16\n")
    for hooks in (repo / ".git" / "hooks", repo / "custom-hooks"):
        hooks.mkdir(exist_ok=True)
        for hook in ("post-checkout", "reference-transaction"):
            (hooks / hook).write_text(f"#!/bin/sh\n{marker(hook)}\n")
            (hooks / hook).chmod(0o755)
    git(repo, "config", "core.hooksPath", str(repo / "custom-hooks"))
    return repo, marks
