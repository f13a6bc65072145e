"""Two ``operator publish`` of one candidate at once (issue 24 §5): serialized on this
machine, so exactly one pushes and opens the pull request and the other is refused before
any prompt, key or forge call, with its own refused receipt."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from factory.operator.publish_flow import PublishFlow
from factory.operator.publish_lock import hold, release
from factory.operator.session import Result, operate
from tests.operator.helpers import REPO, ScriptedTerminal, World
from tests.support.git import git


def _publish(world: World, out: str) -> Result:
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    return operate(world.out(out), flow, lambda: (ScriptedTerminal(), world.authority()))


def test_a_publish_while_another_holds_the_lock_is_refused_before_any_effect(
    file_world: World,
) -> None:
    common = git(file_world.wt, "rev-parse", "--path-format=absolute", "--git-common-dir")
    held = hold(Path(common.strip()))
    before = file_world.state()
    try:
        second = _publish(file_world, "second.json")
    finally:
        release(held)
    assert second.exit_code == 2, second.diagnostic
    doc = json.loads(second.data)
    assert doc["status"] == "refused" and doc["grant"] is None
    assert doc["refusal"]["code"] == "publish-in-progress"
    assert file_world.state() == before
    assert file_world.forge.state.calls("POST", "/pulls") == []
    # twin: once the other publish has ended, the same publish goes through
    again = _publish(file_world, "again.json")
    assert again.exit_code == 0, again.diagnostic


def test_two_publishes_at_once_open_one_pull_request(file_world: World) -> None:
    results: list[Result] = []
    gate = threading.Barrier(2)

    def one(name: str) -> None:
        gate.wait()
        results.append(_publish(file_world, name))

    threads = [threading.Thread(target=one, args=(f"p{i}.json",)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    codes = sorted(r.exit_code for r in results)
    assert codes in ([0, 0], [0, 2]), [r.diagnostic for r in results]
    assert len(file_world.forge.state.calls("POST", "/pulls")) == 1
