"""``operator publish`` through the core flow with a scripted operator: the happy path over
git http-backend and file://, and every negative control leaving the remote, the forge and
the worktree exactly as they were."""

from __future__ import annotations

from pathlib import Path

from factory.operator.publish_flow import PublishFlow
from factory.operator.session import Result, operate
from tests.operator.helpers import REPO, ScriptedTerminal, World, receipt_json
from tests.support.git import git


def publish(
    world: World, terminal: ScriptedTerminal, out: Path | None = None, **kw: object
) -> Result:
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    authority = world.authority(**kw)
    return operate(out or world.out(), flow, lambda: (terminal, authority))


def test_publish_over_http_commits_the_candidate_tree(world: World) -> None:
    before = world.state()
    result = publish(world, ScriptedTerminal())
    assert result.exit_code == 0, result.diagnostic
    doc = receipt_json(world.out())
    assert doc["status"] == "executed"
    pub = doc["publication"]
    agent = receipt_json(world.agent_receipt)
    cand = agent["candidate"]["initial"]["body"]
    # the commit's tree IS the bound candidate tree; the parent is the base commit
    assert (
        git(world.bare, "rev-parse", f"{pub['commit']}^{{tree}}").strip() == cand["candidate_tree"]
    )
    assert git(world.bare, "rev-parse", f"{pub['commit']}^").strip() == cand["base_commit"]
    assert git(world.bare, "rev-parse", f"refs/heads/{pub['branch']}").strip() == pub["commit"]
    assert pub["push"] == "pushed" and pub["local_branch"] == "created"
    # the user's HEAD, index and worktree are untouched
    after = world.state()
    for key in ("status", "head", "index"):
        assert after[key] == before[key], key
    pulls = world.forge.state.calls("POST", "/pulls")
    assert len(pulls) == 1 and pulls[0].authorized
    assert pulls[0].body["head"] == pub["branch"] and pulls[0].body["base"] == "main"


def test_publish_over_file_url_and_a_second_publish_is_refused(file_world: World) -> None:
    first = publish(file_world, ScriptedTerminal())
    assert first.exit_code == 0, first.diagnostic
    pub = receipt_json(file_world.out())["publication"]
    assert git(file_world.bare, "rev-parse", f"refs/heads/{pub['branch']}").strip() == pub["commit"]
    # Same receipt again: same intent, same commit; the open PR is identical → reused, and the
    # branch names the same commit on both sides → reused. Nothing new is pushed or opened.
    before = file_world.state()
    again = publish(file_world, ScriptedTerminal(), out=file_world.out("again.json"))
    assert again.exit_code == 0, again.diagnostic
    second = receipt_json(file_world.out("again.json"))["publication"]
    assert second["commit"] == pub["commit"]
    assert (second["local_branch"], second["push"]) == ("reused", "reused")
    assert second["pull_request"]["reused"] is True
    assert file_world.state()["remote"] == before["remote"]
    assert len(file_world.forge.state.calls("POST", "/pulls")) == 1


def _refused(
    world: World, result: Result, stage: str, code: str, before: dict[str, object]
) -> None:
    assert result.exit_code == 2, result.diagnostic
    doc = receipt_json(world.out())
    assert doc["status"] == "refused" and doc["grant"] is None
    assert doc["refusal"] == {"stage": stage, "code": code}
    assert world.state() == before
    assert world.forge.state.calls("POST", "/pulls") == []


def test_wrong_shortened_and_recased_revisions_are_refused(world: World) -> None:
    before = world.state()
    for name, typed in (
        ("wrong", lambda r: "sha256:" + "0" * 64),
        ("short", lambda r: r[:20]),
        ("upper", lambda r: r.upper()),
        ("hex-only", lambda r: r.removeprefix("sha256:")),
    ):
        out = world.out(f"{name}.json")
        result = publish(world, ScriptedTerminal(revision=typed), out=out)
        assert result.exit_code == 2
        assert receipt_json(out)["refusal"] == {"stage": "confirm", "code": "confirmation-mismatch"}
    assert world.state() == before


def test_wrong_passphrase_is_refused(world: World) -> None:
    before = world.state()
    result = publish(world, ScriptedTerminal(passphrase=b"not the passphrase at all"))
    _refused(world, result, "unlock", "passphrase-wrong", before)


def test_ctrl_c_and_ctrl_d_at_each_prompt(world: World) -> None:
    from tests.operator.helpers import CLOSED

    before = world.state()
    cases = [
        (ScriptedTerminal(revision=lambda r: KeyboardInterrupt()), "confirm", "prompt-cancelled"),
        (ScriptedTerminal(revision=lambda r: CLOSED), "confirm", "confirmation-closed"),
        (ScriptedTerminal(passphrase=KeyboardInterrupt()), "unlock", "prompt-cancelled"),
        (ScriptedTerminal(passphrase=CLOSED), "unlock", "passphrase-closed"),
    ]
    for index, (terminal, stage, code) in enumerate(cases):
        out = world.out(f"abandon-{index}.json")
        result = publish(world, terminal, out=out)
        assert result.exit_code == 2
        assert receipt_json(out)["refusal"] == {"stage": stage, "code": code}
    assert world.state() == before
    assert not list(world.ledger.iterdir())


def test_a_hang_up_at_either_prompt_is_interrupted_not_a_refusal(world: World) -> None:
    """The twin of the Ctrl-C cases above: a hang-up is no answer, so it is ``interrupted``
    (130) with no refusal and nothing spent, where Ctrl-C is ``prompt-cancelled`` (2)."""
    from factory.operator.tty import HungUp

    before = world.state()
    cases = [ScriptedTerminal(revision=lambda r: HungUp()), ScriptedTerminal(passphrase=HungUp())]
    for index, terminal in enumerate(cases):
        out = world.out(f"hangup-{index}.json")
        result = publish(world, terminal, out=out)
        assert result.exit_code == 130
        assert result.diagnostic == "factory: interrupted: the terminal hung up"
        doc = receipt_json(out)
        assert (doc["status"], doc["refusal"], doc["grant"]) == ("interrupted", None, None)
    assert world.state() == before
    assert not list(world.ledger.iterdir())


def test_worktree_changed_after_the_run_is_refused(world: World) -> None:
    (world.wt / "src" / "app.py").write_text("x = 2\n")
    before = world.state()
    result = publish(world, ScriptedTerminal())
    _refused(world, result, "intent", "candidate-changed", before)


def test_receipt_edited_after_verification_is_refused(world: World) -> None:
    data = world.agent_receipt.read_bytes()
    world.agent_receipt.write_bytes(data.replace(b'"fix it"', b'"fix all"'))
    before = world.state()
    result = publish(world, ScriptedTerminal())
    _refused(world, result, "intent", "receipt-not-verified", before)


def test_receipt_edited_while_the_operator_types_is_stale(world: World) -> None:
    data = world.agent_receipt.read_bytes()

    def edit() -> None:
        world.agent_receipt.write_bytes(data + b" ")

    before = world.state()
    result = publish(world, ScriptedTerminal(before_secret=edit))
    assert result.exit_code == 2
    doc = receipt_json(world.out())
    assert doc["refusal"]["stage"] == "grant" and doc["grant"] is None
    assert world.state() == before


def _intent(world: World):  # type: ignore[no-untyped-def]
    """The intent the flow will build (observation only: no effect)."""
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    return flow.observe()


def _other_commit(world: World) -> str:
    """A commit that is not the candidate's, pushed nowhere yet."""
    tree = git(world.repo, "rev-parse", "HEAD^{tree}").strip()
    return git(world.repo, "commit-tree", tree, "-p", "HEAD", "-m", "someone else").strip()


def test_expired_grant_is_refused(world: World) -> None:
    import datetime as dt

    times = iter([dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)])

    def clock() -> dt.datetime:
        # issued at 12:00:00, checked 121 s later: past the 120 s lifetime
        return next(times, dt.datetime(2026, 3, 1, 12, 2, 1, tzinfo=dt.UTC))

    before = world.state()
    result = publish(world, ScriptedTerminal(), clock=clock)
    _refused(world, result, "grant", "grant-expired", before)
    assert not list(world.ledger.iterdir())


def test_replayed_grant_is_refused(world: World, monkeypatch: object) -> None:
    import uuid

    import pytest

    from factory.operator.ledger import entry_name

    mp = pytest.MonkeyPatch()
    fixed = uuid.UUID(int=7)
    mp.setattr("factory.operator.grant.uuid.uuid4", lambda: fixed)
    try:
        world.ledger.mkdir()
        # The same grant id already spent once: its entry exists.
        (world.ledger / entry_name(f"factory-grant-{fixed.hex}")).write_text("{}\n")
        before = world.state()
        result = publish(world, ScriptedTerminal())
        _refused(world, result, "grant", "grant-consumed", before)
    finally:
        mp.undo()


def test_forged_signature_is_refused(world: World) -> None:
    import pytest

    from factory.operator import grant, session

    real = grant.sign

    def forge_signature(*args: object, **kw: object):  # type: ignore[no-untyped-def]
        signed = real(*args, **kw)  # type: ignore[arg-type]
        flipped = ("A" if signed.signature[0] != "A" else "B") + signed.signature[1:]
        return signed.model_copy(update={"signature": flipped})

    mp = pytest.MonkeyPatch()
    mp.setattr(session, "sign", forge_signature)
    try:
        before = world.state()
        result = publish(world, ScriptedTerminal())
        _refused(world, result, "grant", "grant-signature-invalid", before)
    finally:
        mp.undo()


def test_branch_existing_at_another_commit_is_refused(world: World) -> None:
    branch = _intent(world).branch
    other = _other_commit(world)
    git(world.repo, "push", "-q", "origin", f"{other}:refs/heads/{branch}")
    before = world.state()
    result = publish(world, ScriptedTerminal())
    _refused(world, result, "observe", "branch-exists", before)


def test_an_existing_different_pull_request_is_refused(world: World) -> None:
    branch = _intent(world).branch
    world.forge.state.add_pull(REPO, head=branch, title="something else")
    before = world.state()
    result = publish(world, ScriptedTerminal())
    _refused(world, result, "observe", "pull-request-exists", before)


def test_a_pull_request_appearing_while_the_operator_types_is_refused(world: World) -> None:
    branch = _intent(world).branch
    before = world.state()

    def meanwhile() -> None:
        world.forge.state.add_pull(REPO, head=branch, title="raced")
        before["forge"] = world.forge.state.snapshot()

    result = publish(world, ScriptedTerminal(before_secret=meanwhile))
    _refused(world, result, "grant", "pull-request-exists", before)


def test_the_lease_holds_when_the_remote_moves_before_the_push(world: World) -> None:
    import pytest

    from factory.operator import adapter

    real_push = adapter.push
    other = _other_commit(world)

    def racing_push(root, intent, oid):  # type: ignore[no-untyped-def]
        git(world.repo, "push", "-q", "origin", f"{other}:refs/heads/{intent.branch}")
        return real_push(root, intent, oid)

    mp = pytest.MonkeyPatch()
    mp.setattr(adapter, "push", racing_push)
    try:
        result = publish(world, ScriptedTerminal())
    finally:
        mp.undo()
    assert result.exit_code == 4, result.diagnostic
    doc = receipt_json(world.out())
    assert doc["status"] == "execution-failed" and doc["error"]["code"] == "push-rejected"
    assert doc["publication"]["push"] == "not-run" and doc["grant"] is not None
    branch = doc["publication"]["branch"]
    # the other party's commit is still there: nothing was overwritten
    assert git(world.bare, "rev-parse", f"refs/heads/{branch}").strip() == other
    assert world.forge.state.calls("POST", "/pulls") == []
