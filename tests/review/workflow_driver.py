"""A user who follows what ``factory review`` prints (issue 23 §1), for the workflow tests.

:func:`drive` asks the intended gate; on a denial it runs the FIRST runnable command of the
answer's ``next`` list, then the first of that command's own ``next``, and so on, back to the
intended gate whenever a command names a gate or is a git command (which prints no
``next``). It stops at an allow of the intended gate or at a terminal answer (the gate's
``action`` is ``stop``), and fails on an empty ``next`` of a non-allow answer, a ``next``
entry that is not a runnable command, a cycle (the same command on the same repository
and store twice) or no end within the bound.

"Runnable" as a user reads it: ``factory review …`` with placeholders filled (TEXT, NAME,
FILE) or ``git …``. ``factory review lens`` calls a model; the driver stands in for the
reviewer instead and hands a clean reviewer result to ``finalize --result`` (the next
entry ``start`` prints after ``lens``) — a test emulation of a reviewer, said here.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.review.cli_helpers import Ran, review, store_root
from tests.support.git import git

BOUND = 8
PLACEHOLDERS = {"TEXT": "following what factory printed", "NAME": "workflow-user"}


@dataclass
class Trail:
    """What the user ran, in order, and how the walk ended."""

    steps: list[tuple[str, int]] = field(default_factory=list)
    end: str = ""  # "allow" | "terminal"
    last: Ran | None = None

    def ran(self, prefix: str) -> bool:
        return any(cmd.startswith(prefix) for cmd, _ in self.steps)


def _state_key(repo: Path) -> str:
    """The checkout, index, HEAD and store, hashed (a cycle repeats all of them)."""
    h = hashlib.sha256()
    h.update(git(repo, "rev-parse", "HEAD").encode())
    h.update(git(repo, "status", "--porcelain=v2", "-z", "-uall").encode())
    h.update(git(repo, "stash", "list").encode())
    for p in sorted(repo.rglob("*")):
        if ".git" not in p.relative_to(repo).parts and p.is_file():
            h.update(str(p.relative_to(repo)).encode() + p.read_bytes())
    root = store_root(repo)
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.name != "LOCK" and not p.name.endswith("memo.json"):
                h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()


def _next_of(ran: Ran) -> list[str]:
    if not isinstance(ran.doc, dict):
        return []
    if "context" in ran.doc:
        return list(ran.doc["context"]["next"])
    return list(ran.doc.get("next") or [])


def _runnable(entry: str) -> list[str]:
    """The argv a user would type for ``entry``; fails on prose."""
    argv = shlex.split(entry)
    ok = argv[:2] == ["factory", "review"] or (argv[:1] == ["git"] and len(argv) > 1)
    assert ok, f"a next entry that is not a command: {entry!r}"
    return argv


class Driver:
    """Drives one repository towards an allow of ``gate``."""

    def __init__(self, repo: Path, inputs: Path, gate: str, gate_args: tuple[str, ...] = ()):
        self.repo, self.inputs, self.gate, self.gate_args = repo, inputs, gate, gate_args
        inputs.mkdir(parents=True, exist_ok=True)
        self.result = inputs / "clean-result.json"
        self.result.write_text(
            json.dumps({"findings": [], "evidence": ["read the whole candidate diff"]})
        )
        self.evidence = inputs / "evidence.txt"
        self.evidence.write_bytes(b"suite: 12 passed\n")

    def ask(self) -> Ran:
        return review("validate", "--gate", self.gate, *self.gate_args, "--json", cwd=self.repo)

    def _fill(self, argv: list[str]) -> list[str]:
        out: list[str] = []
        for i, a in enumerate(argv):
            if a == "FILE":
                flag = argv[i - 1] if i else ""
                out.append(str(self.evidence if flag == "--evidence" else self.result))
            else:
                out.append(PLACEHOLDERS.get(a, a))
        return out

    def _choose(self, nxt: list[str]) -> list[str]:
        assert nxt, "a non-allow answer with an empty next"
        argv = [_runnable(e) for e in nxt]
        for cmd in argv:
            if cmd[:3] == ["factory", "review", "lens"]:
                continue  # the reviewer: the driver answers through finalize --result
            return self._fill(cmd)
        raise AssertionError(f"nothing a user can run in {nxt}")

    def run(self, argv: list[str]) -> Ran | None:
        if argv[0] == "git":
            proc = subprocess.run(argv, cwd=self.repo, capture_output=True, check=False)
            assert proc.returncode == 0, (argv, proc.stderr)
            return None
        return review(*argv[2:], cwd=self.repo)

    def drive(self, bound: int = BOUND) -> Trail:
        trail = Trail()
        seen: set[tuple[str, str]] = set()
        argv = ["factory", "review", "validate", "--gate", self.gate]
        for _ in range(bound):
            key = (" ".join(argv), _state_key(self.repo))
            assert key not in seen, f"cycle: {argv} again on the same state: {trail.steps}"
            seen.add(key)
            is_gate = argv[2:3] == ["validate"]
            ran = self.ask() if is_gate else self.run(argv)
            trail.steps.append((" ".join(argv[2:] if argv[0] == "factory" else argv), -1))
            if ran is None:  # git: back to the gate
                argv = ["factory", "review", "validate", "--gate", self.gate]
                continue
            trail.steps[-1] = (trail.steps[-1][0], ran.code)
            trail.last = ran
            assert ran.code != 1, ran.stderr
            if is_gate and ran.doc["allowed"]:
                trail.end = "allow"
                return trail
            if is_gate and ran.doc["action"] == "stop":
                trail.end = "terminal"
                return trail
            nxt = _next_of(ran)
            assert nxt, f"{argv} answered no next: {ran.stdout[:400]!r} {ran.stderr}"
            argv = self._choose(nxt)
            if argv[2:3] == ["validate"]:
                argv = ["factory", "review", "validate", "--gate", self.gate]
        raise AssertionError(f"no allow or terminal answer within {bound} steps: {trail.steps}")
