"""The pure reducer (SPEC B-1): minting, high-water mark, range checks, authority, acks."""

from __future__ import annotations

from typing import Any

import pytest

from factory.bus.decide import decide
from factory.bus.model import ACK_MEANING, CLAIM_WINDOW, VERB_INPUTS, mint, parse_ref
from factory.bus.reducer import Rejection, State, apply, replay, state_digest

AT = "2026-01-01T00:00:00.000Z"


def step(state: State, verb: str, **args: Any) -> Any:
    event, result = decide(state, VERB_INPUTS[verb].model_validate(args), AT)  # type: ignore[arg-type]
    apply(state, event)
    return event, result


def three_actors() -> State:
    s = State()
    for name, kind in (("c", "coordinator"), ("b", "worker"), ("r", "reviewer")):
        step(s, "register", name=name, kind=kind)
    return s


@pytest.mark.parametrize(
    ("text", "ordinal"),
    [("msg-0001", 1), ("msg-0042", 42), ("msg-12345", 12345), ("msg-999999999", 999_999_999)],
)
def test_ids_have_one_spelling(text: str, ordinal: int) -> None:
    assert parse_ref(text, "msg") == ordinal and mint("msg", ordinal) == text


@pytest.mark.parametrize(
    "text", ["msg-1", "msg-00042", "msg-0000", "msg-1000000000", "cor-0001", "msg--001", "msg-١٢٣٤"]
)
def test_other_spellings_and_out_of_range_ids_are_refused(text: str) -> None:
    assert parse_ref(text, "msg") is None


def test_decide_does_not_mutate_and_replay_is_deterministic() -> None:
    s = three_actors()
    digest = state_digest(s)
    decide(s, VERB_INPUTS["heartbeat"].model_validate({"actor": "act-0001"}), AT)  # type: ignore[arg-type]
    assert state_digest(s) == digest


def test_register_is_idempotent_by_name_and_refs_are_minted_in_order() -> None:
    s = three_actors()
    _, again = step(s, "register", name="b", kind="worker")
    assert again["ref"] == "act-0002" and again["isNew"] is False
    _, new = step(s, "register", name="d", kind="worker")
    assert new["ref"] == "act-0004"
    _, clash = step(s, "register", name="b", kind="reviewer")
    assert isinstance(clash, Rejection) and clash.reason == "kind-mismatch"


def test_claimed_correlation_advances_the_high_water_mark_so_it_is_never_reminted() -> None:
    s = three_actors()
    _, claimed = step(
        s,
        "send",
        **{"from": "act-0001", "to": "act-0002", "text": "x", "correlationId": "cor-0007"},
    )
    assert claimed["correlationId"] == "cor-0007"
    _, minted = step(s, "send", **{"from": "act-0001", "to": "act-0002", "text": "y"})
    assert minted["correlationId"] == "cor-0008"
    _, reuse = step(
        s,
        "send",
        **{"from": "act-0002", "to": "act-0001", "text": "z", "correlationId": "cor-0007"},
    )
    assert reuse["correlationId"] == "cor-0007"


@pytest.mark.parametrize("claim", ["cor-0002", mint("cor", 8 + CLAIM_WINDOW + 1), "cor-999999999"])
def test_claims_below_the_mark_or_beyond_the_window_are_rejected(claim: str) -> None:
    s = three_actors()
    step(
        s,
        "send",
        **{"from": "act-0001", "to": "act-0002", "text": "x", "correlationId": "cor-0008"},
    )
    event, result = step(
        s, "send", **{"from": "act-0001", "to": "act-0002", "text": "x", "correlationId": claim}
    )
    assert isinstance(result, Rejection) and result.reason == "correlation-out-of-range"
    assert event.type == "command.rejected" and s.correlation_hwm == 8


def test_only_grantable_authority_is_granted_the_rest_is_denied() -> None:
    s = three_actors()
    args = {
        "from": "act-0001",
        "to": "act-0002",
        "text": "x",
        "requestedAuthority": ["read", "merge", "report", "push"],
    }
    event, result = step(s, "send", **args)
    assert result["authority"] == {
        "requested": ["merge", "push", "read", "report"],
        "granted": ["read", "report"],
        "denied": ["merge", "push"],
        "effect": "none",
    }
    assert event.message.trust == "untrusted-text"


def test_ack_means_receipt_only_and_only_the_recipient_acks_once() -> None:
    s = three_actors()
    _, sent = step(s, "send", **{"from": "act-0001", "to": "act-0002", "text": "x"})
    mid = sent["messageId"]
    _, wrong = step(s, "ack", actor="act-0003", messageId=mid)
    assert isinstance(wrong, Rejection) and wrong.reason == "ack-not-recipient"
    _, unknown = step(s, "ack", actor="act-0002", messageId="msg-0099")
    assert isinstance(unknown, Rejection) and unknown.reason == "ack-unknown-message"
    _, ok = step(s, "ack", actor="act-0002", messageId=mid)
    assert ok == {"messageId": mid, "ackedBy": "act-0002", "meaning": ACK_MEANING}
    _, twice = step(s, "ack", actor="act-0002", messageId=mid)
    assert isinstance(twice, Rejection) and twice.reason == "ack-duplicate"
    assert s.acks == 1 and s.rejections == 3


def test_handoff_transfers_no_authority_and_is_a_message_on_the_thread() -> None:
    s = three_actors()
    _, sent = step(s, "send", **{"from": "act-0001", "to": "act-0002", "text": "x"})
    event, handed = step(
        s,
        "handoff",
        **{
            "from": "act-0002",
            "to": "act-0003",
            "summary": "go",
            "correlationId": sent["correlationId"],
        },
    )
    assert handed["authorityTransferred"] == [] and event.authority_transferred == ()
    assert s.handoffs == 1 and s.correlations[sent["correlationId"]] == 2
    _, inbox = step(s, "inbox", actor="act-0003")
    assert [m["messageId"] for m in inbox["messages"]] == [handed["messageId"]]
    assert inbox["messages"][0]["trust"] == "untrusted-text" and "untrusted" in inbox["notice"]


def test_unregistered_addresses_are_rejected_not_recorded_as_messages() -> None:
    s = three_actors()
    _, result = step(s, "send", **{"from": "act-0001", "to": "act-0009", "text": "x"})
    assert isinstance(result, Rejection) and result.fields == ("to",)
    assert s.message_hwm == 0
    events = []
    fresh = State()
    event, _ = decide(fresh, VERB_INPUTS["register"].model_validate({"name": "a", "kind": "k"}), AT)  # type: ignore[arg-type]
    events.append(event)
    assert replay(events).actor_hwm == 1
