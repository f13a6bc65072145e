"""A repository's own git configuration never chooses what factory's remote git runs or
where it connects (issue 24 §1): a URL rewrite, a credential helper, a proxy or a remote
helper set by the repository refuses ``operator publish`` before the prompt and before any
network call; the same settings in the user's own configuration are honoured."""

from __future__ import annotations

import pytest

from factory.gitio.remote_steering import steering_keys
from factory.operator.publish_flow import PublishFlow
from factory.operator.session import Result, operate
from tests.operator.helpers import REPO, ScriptedTerminal, World
from tests.support.git import git

URL = "https://example.test/o/r.git"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("credential.helper", "!/tmp/steal"),
        ("credential.https://example.test.helper", "!/tmp/steal"),
        ("http.proxy", "http://10.0.0.1:3128"),
        ("http.https://example.test.proxy", "http://10.0.0.1:3128"),
        ("remote.origin.proxy", "http://10.0.0.1:3128"),
        ("remote.origin.vcs", "evil"),
        ("core.gitProxy", "/tmp/proxy"),
        ("core.askPass", "/tmp/askpass"),
        ("url.https://elsewhere.test/.insteadOf", "https://example.test/"),
        ("url.https://elsewhere.test/.pushInsteadOf", "https://example.test/"),
    ],
)
def test_each_steering_key_counts_in_the_repository_only(key: str, value: str) -> None:
    local = [("local", key, value)]
    assert steering_keys(local, "origin", [URL]) == [key]
    assert steering_keys([("worktree", key, value)], "origin", [URL]) == [key]
    for scope in ("global", "system", "command"):  # twin: the user's own: honoured
        assert steering_keys([(scope, key, value)], "origin", [URL]) == []


def test_rewrites_of_other_urls_and_other_remotes_settings_do_not_count() -> None:
    entries = [
        ("local", "url.https://a.test/.insteadOf", "https://unrelated.test/"),
        ("local", "remote.upstream.proxy", "http://10.0.0.1:3128"),
        ("local", "remote.origin.url", URL),
        ("local", "user.name", "someone"),
    ]
    assert steering_keys(entries, "origin", [URL]) == []


def _publish(world: World, out: str = "op.json") -> Result:
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    return operate(world.out(out), flow, lambda: (ScriptedTerminal(), world.authority()))


@pytest.mark.parametrize("key", ["credential.helper", "core.gitProxy", "remote.origin.vcs"])
def test_publish_is_refused_before_the_prompt_and_nothing_runs(file_world: World, key: str) -> None:
    mark = file_world.tmp / "ran"
    plant = file_world.tmp / "plant.sh"
    plant.write_text(f'#!/bin/sh\ntouch "{mark}"\nexit 1\n')
    plant.chmod(0o755)
    git(file_world.repo, "config", key, f"!{plant}" if key == "credential.helper" else str(plant))
    before = file_world.state()
    result = _publish(file_world)
    assert result.exit_code == 2, result.diagnostic
    said = result.diagnostic or ""
    assert "remote-config-steers" in said and key.lower() in said.lower()
    assert not mark.exists() and file_world.state() == before
    assert file_world.forge.state.calls("POST", "/pulls") == []
    git(file_world.repo, "config", "--unset", key)  # twin: without it, the same publish works
    again = _publish(file_world, "again.json")
    assert again.exit_code == 0, again.diagnostic
