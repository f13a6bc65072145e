"""A repository's transport programs never run under ``operator publish`` (issue 24 §1).

``remote.origin.uploadpack`` and ``receivepack`` name a program that leaves a marker and
then does the real work. git keeps the repository's value over a ``-c``, so factory pins
them with ``--upload-pack`` / ``--receive-pack``. Twin: plain ``git ls-remote`` runs it.
"""

from __future__ import annotations

from pathlib import Path

from factory.operator.publish_flow import PublishFlow
from factory.operator.session import Result, operate
from tests.operator.helpers import REPO, ScriptedTerminal, World
from tests.support.git import git


def publish(world: World, terminal: ScriptedTerminal) -> Result:
    """One ``operator publish`` of the world's receipt, as the publish-flow tests run it."""
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    return operate(world.out(), flow, lambda: (terminal, world.authority()))


def _plant(world: World, key: str, real: str) -> Path:
    mark = world.tmp / f"{key}.ran"
    prog = world.tmp / f"{key}.sh"
    prog.write_text(f'#!/bin/sh\ntouch "{mark}"\nexec {real} "$@"\n')
    prog.chmod(0o755)
    git(world.repo, "config", f"remote.origin.{key}", str(prog))
    return mark


def test_planted_upload_and_receive_programs_never_run(file_world: World) -> None:
    up = _plant(file_world, "uploadpack", "git-upload-pack")
    down = _plant(file_world, "receivepack", "git-receive-pack")
    result = publish(file_world, ScriptedTerminal())
    assert result.exit_code == 0, result.diagnostic
    assert not up.exists() and not down.exists()
    git(file_world.repo, "ls-remote", "origin")  # twin: plain git runs the plant
    assert up.exists()
