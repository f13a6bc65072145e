"""``factory publish`` as a person runs it: the real CLI, the operator at a pseudo-terminal
(pexpect), a bare remote over ``git http-backend``, the loopback forge emulation; and the
gate part, which needs no terminal, through a pipe."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.operator.helpers import REPO, World, receipt_json
from tests.operator.pty import Screen, authorize
from tests.pipeline.helpers import (
    DOCS,
    FIXED,
    TIMEOUT_MS,
    WRONG,
    cli_env,
    make_world,
    publish_args,
    store,
)
from tests.support.cli import run_factory
from tests.support.forge import LoopbackForge
from tests.support.git import add_linked_worktree, git
from tests.support.git_remote import HttpRemote, remote_state


@pytest.fixture
def low(tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote) -> World:
    return make_world(tmp_path, forge, http_remote, DOCS)


def deep(world: World, out: Path) -> tuple[int, dict[str, object]]:
    proc = run_factory(
        ["operator", "verify", str(out), "--deep", "--public-key", str(world.public)],
        env=cli_env(world),
    )
    report: dict[str, object] = json.loads(proc.stdout)
    return proc.returncode, report


def test_publish_at_a_terminal_from_receipt_to_pull_request(low: World) -> None:
    out = low.out("publish.json")
    before = low.state()
    screen = Screen(publish_args(low, out), cli_env(low))
    assert authorize(screen) == 0, screen.text.decode(errors="replace")
    shown = screen.text
    for needle in (b"gate: run publish-", b"decision gate run", b"gate head (accepted)",
                   b"review receipt: none relied on", b"never merge"):  # fmt: skip
        assert needle in shown, needle
    doc = receipt_json(out)
    pub = doc["publication"]
    assert doc["status"] == "executed" and pub["push"] == "pushed"
    # the branch is on the remote at the commit whose tree is the candidate tree
    assert pub["commit"] in remote_state(low.bare)["refs"]
    tree = git(low.bare, "rev-parse", f"{pub['commit']}^{{tree}}").strip()
    assert tree == doc["intent"]["candidate"]["candidate_tree"]
    pulls = low.forge.state.calls("POST", "/pulls")
    assert len(pulls) == 1 and pulls[0].body["head"] == pub["branch"]
    assert doc["gate"]["run"] in pulls[0].body["body"]
    after = low.state()
    for key in ("status", "head", "index"):
        assert after[key] == before[key], key
    code, report = deep(low, out)
    assert code == 0 and report["ok"] is True, report


def test_the_gate_runs_without_a_terminal_and_a_held_receipt_says_why(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world = make_world(tmp_path, forge, http_remote, WRONG)
    before = world.state()
    out = world.out("held.json")
    proc = run_factory(publish_args(world, out), env=cli_env(world))
    assert proc.returncode == 3, proc.stderr.decode()
    err = proc.stderr.decode()
    assert "HELD by the decision gate" in err and "at stage tests-pass" in err
    assert "tests_exit_zero: false: observed 1" in err and "next:" in err
    doc = json.loads(proc.stdout)
    assert doc == receipt_json(out) and doc["status"] == "held"
    assert world.state() == before and world.forge.state.requests == []
    code, report = deep(world, out)  # the chain so far verifies
    assert code == 0, report


def test_a_gate_accepted_for_another_candidate_is_not_accepted_for_this_one(
    low: World,
) -> None:
    # The gate accepts candidate A (through a pipe: the gate runs; the operator then
    # refuses the pipe, tty-required).
    first = run_factory(publish_args(low, low.out("a.json")), env=cli_env(low))
    assert first.returncode == 2, first.stderr.decode()
    doc_a = receipt_json(low.out("a.json"))
    assert doc_a["refusal"] == {"stage": "admission", "code": "tty-required"}
    assert doc_a["gate"]["completed"] is True
    # Candidate B: another agent run in another linked worktree of the same repository.
    wt_b = add_linked_worktree(low.repo, low.tmp / "wt-b", branch="work-b")
    low.fakes.mode(claude="ok", codex="ok", claude_files=FIXED)
    receipt_b = low.tmp / "out" / "agent-b.json"
    made = run_factory(
        ["agent", "--worktree", str(wt_b), "--task", "t", "--out", str(receipt_b),
         "--timeout-ms", TIMEOUT_MS],
        env=cli_env(low), timeout=600,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr.decode()
    before = low.state()
    base = [
        "operator", "publish", "--receipt", str(receipt_b), "--repository", REPO,
        "--remote", "origin", "--forge-url", low.forge.url, "--private-key", str(low.private),
        "--public-key", str(low.public), "--ledger", str(low.ledger), "--store", str(store(low)),
    ]  # fmt: skip
    for name, extra, why in (
        ("named", ["--gate-run", doc_a["gate"]["run"]], b"is for another candidate tree"),
        ("found", [], b"is for another candidate tree"),
    ):
        out = low.out(f"b-{name}.json")
        screen = Screen([*base, "--out", str(out), *extra], cli_env(low))
        assert screen.finish() == 2, screen.text.decode(errors="replace")
        doc = receipt_json(out)
        assert doc["refusal"] == {"stage": "intent", "code": "gate-not-accepted"}, name
        assert why in screen.text, screen.text
        assert b"Type the full intent revision" not in screen.text  # no prompt was shown
    assert low.state() == before and low.forge.state.calls("POST", "/pulls") == []


def test_verify_deep_fails_on_a_tampered_runpack(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world = make_world(tmp_path, forge, http_remote, WRONG)
    out = world.out("held.json")
    assert run_factory(publish_args(world, out), env=cli_env(world)).returncode == 3
    assert deep(world, out)[0] == 0  # negative control
    history = out.with_name("held.json.gate") / "history.jsonl"
    data = bytearray(history.read_bytes())
    data[10] ^= 1
    history.chmod(0o644)
    history.write_bytes(bytes(data))
    code, report = deep(world, out)
    assert code == 4
    chain = report["chain"]
    assert isinstance(chain, dict) and any("record_integrity" in p for p in chain["problems"])


@pytest.mark.parametrize(
    ("tail", "needle"),
    [(["--test"], b"--test needs the command"), (["--", "true"], b"goes after '--test --'")],
)
def test_the_test_command_flag_is_checked(low: World, tail: list[str], needle: bytes) -> None:
    args = publish_args(low, low.out("x.json"))
    args = args[: args.index("--test")] + tail
    proc = run_factory(args, env=cli_env(low))
    assert proc.returncode == 2 and needle in proc.stderr
    assert not low.out("x.json").exists()


def test_the_builtin_scenario_is_shown() -> None:
    proc = run_factory(["gate", "scenario", "show", "publish-candidate"])
    assert proc.returncode == 0
    text = proc.stdout.decode()
    for stage in ("agent-approved", "tests-pass", "review-approved"):
        assert f'id = "{stage}"' in text


def own_scenario(world: World) -> Path:
    """publish-candidate copied, renamed, with one more stage (a lint command)."""
    text = run_factory(["gate", "scenario", "show", "publish-candidate"]).stdout.decode()
    text = text.replace('id = "publish-candidate"', 'id = "my-publish"', 1)
    text = text.replace(
        '"tests-pass", "review-approved"] }', '"tests-pass", "review-approved", "lint"] }'
    )
    lint = json.dumps(json.dumps([sys.executable, "-c", "pass"]))
    text += f"""
[[conditions]]
id = "lint_clean"
description = "The lint command exits 0."
domain = {{ kind = "integer" }}
predicate = "equals"
operand = 0
policy = {{ ingress = ["acquired"], producers = ["factory:command"], scope = {{ kind = "tree", param = "candidate_tree" }}, independent = true, max_age_s = 3600 }}
acquire = {{ provider = "command", argv_json = {lint}, cwd = "${{worktree}}", select = "/exit_code" }}

[[stages]]
id = "lint"
after = "tests-pass"
complete = "lint_clean"
"""  # noqa: E501
    path = world.tmp / "my.toml"
    path.write_text(text)
    return path


def test_a_users_own_scenario_is_required_explicitly_by_operator_publish(low: World) -> None:
    mine = own_scenario(low)
    # The gate part of factory publish runs the user's scenario (through a pipe).
    first = run_factory(
        publish_args(low, low.out("g.json"), "--scenario", str(mine)), env=cli_env(low)
    )
    assert first.returncode == 2, first.stderr.decode()
    gate = receipt_json(low.out("g.json"))["gate"]
    assert gate["scenario"] == "my-publish" and gate["completed"] is True
    assert gate["stages"]["lint"] == "completed"
    base = [
        "operator", "publish", "--receipt", str(low.agent_receipt), "--repository", REPO,
        "--remote", "origin", "--forge-url", low.forge.url, "--private-key", str(low.private),
        "--public-key", str(low.public), "--ledger", str(low.ledger), "--store", str(store(low)),
    ]  # fmt: skip
    # Without --scenario the operator wants publish-candidate, which no run completed.
    before = low.state()
    screen = Screen([*base, "--out", str(low.out("no.json"))], cli_env(low))
    assert screen.finish() == 2, screen.text.decode(errors="replace")
    refused = receipt_json(low.out("no.json"))
    assert refused["refusal"] == {"stage": "intent", "code": "gate-not-accepted"}
    assert low.state() == before
    # Naming the scenario explicitly: its completion law is satisfied, so it publishes.
    out = low.out("yes.json")
    screen = Screen([*base, "--scenario", str(mine), "--out", str(out)], cli_env(low))
    assert authorize(screen) == 0, screen.text.decode(errors="replace")
    doc = receipt_json(out)
    assert doc["status"] == "executed" and doc["intent"]["gate"]["scenario"] == "my-publish"
    assert doc["intent"]["gate"]["spec_hash"] == gate["spec_hash"]
    assert len(low.forge.state.calls("POST", "/pulls")) == 1
