"""Deciding verbs: validated verb input + state → one event and the caller's result (B-1).

Pure like the reducer it builds on (no I/O, no clock: ``at`` is passed in) and it never
mutates the state. A refused verb becomes a ``command.rejected`` event and a
:class:`~factory.bus.reducer.Rejection` result, so the refusal is itself on the record.
Every event :func:`decide` returns passes :func:`~factory.bus.reducer.check` (tested).
"""

from __future__ import annotations

from typing import Any

from factory.bus.model import (
    ACK_MEANING,
    ACTOR_PREFIX,
    BUS_AUTHORITY,
    CORRELATION_PREFIX,
    GRANTABLE,
    HANDOFF_NOTICE,
    MESSAGE_PREFIX,
    UNTRUSTED,
    UNTRUSTED_NOTICE,
    AckInput,
    ActorHeartbeat,
    ActorRegistered,
    Authority,
    AuthorityDenied,
    CommandRejected,
    Event,
    HandoffInput,
    HeartbeatInput,
    InboxInput,
    InboxPolled,
    Message,
    MessageAcked,
    MessageSent,
    RegisterInput,
    SendInput,
    VerbInput,
    WorkHandedOff,
    mint,
)
from factory.bus.reducer import Rejection, Result, State, correlation_admissible


def rejected(command: str, rejection: Rejection, at: str) -> CommandRejected:
    """The ``command.rejected`` event recording ``rejection`` (fields named, values never)."""
    return CommandRejected(
        type="command.rejected",
        at=at,
        command=command,
        reason=rejection.reason,
        fields=list(rejection.fields),
    )


def _unknown(state: State, refs: dict[str, str | None]) -> Rejection | None:
    missing = [f for f, ref in refs.items() if ref is not None and ref not in state.actors]
    if missing:
        return Rejection(
            "unknown-actor", "address is not a registered actor ref; register first", tuple(missing)
        )
    return None


def _correlation(state: State, claimed: str | None) -> str | Rejection:
    if claimed is None:
        return mint(CORRELATION_PREFIX, state.correlation_hwm + 1)
    if correlation_admissible(state, claimed):
        return claimed
    return Rejection(
        "correlation-out-of-range",
        "correlationId must name an existing thread or a new id just above the last one; "
        "omit it to mint one",
        ("correlationId",),
    )


def _message_view(msg: Message, sender_name: str) -> dict[str, Any]:
    view = msg.to_json_value()
    view["fromName"] = sender_name
    return view


def _decide_register(state: State, cmd: RegisterInput, at: str) -> tuple[Event, Result]:
    known = state.names.get(cmd.name)
    if known is not None and state.actors[known].kind != cmd.kind:
        r = Rejection("kind-mismatch", f"{cmd.name} is registered with another kind", ("kind",))
        return rejected("register", r, at), r
    ref = known or mint(ACTOR_PREFIX, state.actor_hwm + 1)
    event = ActorRegistered(
        type="actor.registered",
        at=at,
        ref=ref,
        name=cmd.name,
        kind=cmd.kind,
        is_new=known is None,
        capabilities=list(cmd.capabilities),
        bus_authority=BUS_AUTHORITY,
    )
    return event, {
        "ref": ref,
        "name": cmd.name,
        "kind": cmd.kind,
        "isNew": known is None,
        "busAuthority": list(BUS_AUTHORITY),
    }


def _new_message(state: State, cmd: SendInput | HandoffInput, cor: str) -> Message:
    if isinstance(cmd, SendInput):
        requested = sorted(set(cmd.requested_authority))
        granted = [a for a in requested if a in GRANTABLE]
        denied = [a for a in requested if a not in GRANTABLE]
        text, kind, expects = cmd.text, cmd.kind, cmd.expects_reply
    else:
        requested, granted, denied = [], [], []
        text, kind, expects = cmd.summary, "handoff", True
    return Message(
        message_id=mint(MESSAGE_PREFIX, state.message_hwm + 1),
        correlation_id=cor,
        sender=cmd.sender,
        to=cmd.to,
        reply_to=cmd.reply_to,
        kind=kind,
        text=text,
        expects_reply=expects,
        trust=UNTRUSTED,
        authority=Authority(requested=requested, granted=granted, denied=denied, effect="none"),  # type: ignore[arg-type]
    )


def _decide_send(state: State, cmd: SendInput | HandoffInput, at: str) -> tuple[Event, Result]:
    verb = "send" if isinstance(cmd, SendInput) else "handoff"
    problem = _unknown(state, {"from": cmd.sender, "to": cmd.to, "replyTo": cmd.reply_to})
    if isinstance(cmd, SendInput) and problem is None and cmd.kind == "handoff":
        problem = Rejection(
            "reserved-kind", "kind handoff is reserved; use the handoff verb", ("kind",)
        )
    cor = _correlation(state, cmd.correlation_id) if problem is None else problem
    if isinstance(cor, Rejection):
        return rejected(verb, cor, at), cor
    msg = _new_message(state, cmd, cor)
    result: dict[str, Any] = {"messageId": msg.message_id, "correlationId": cor, "trust": UNTRUSTED}
    if isinstance(cmd, SendInput):
        result["authority"] = msg.authority.to_json_value()
        return MessageSent(type="message.sent", at=at, message=msg), result
    result.update(authorityTransferred=[], replyTo=cmd.reply_to, notice=HANDOFF_NOTICE)
    return WorkHandedOff(
        type="work.handed-off", at=at, message=msg, authority_transferred=()
    ), result


def _decide_inbox(state: State, cmd: InboxInput, at: str) -> tuple[Event, Result]:
    problem = _unknown(state, {"actor": cmd.actor})
    if problem is not None:
        return rejected("inbox", problem, at), problem
    ids = list(state.pending.get(cmd.actor, {}))[: cmd.limit]
    views = []
    for mid in ids:
        body = state.messages[mid].body
        assert body is not None  # pending messages keep their body until acked
        views.append(_message_view(body, state.actors[body.sender].name))
    event = InboxPolled(type="inbox.polled", at=at, actor_id=cmd.actor, message_ids=ids)
    return event, {"actor": cmd.actor, "messages": views, "notice": UNTRUSTED_NOTICE}


def _decide_ack(state: State, cmd: AckInput, at: str) -> tuple[Event, Result]:
    problem = _unknown(state, {"actor": cmd.actor})
    m = state.messages.get(cmd.message_id)
    if problem is None and m is None:
        problem = Rejection(
            "ack-unknown-message",
            "no such message; ack only what your inbox returned",
            ("messageId",),
        )
    elif problem is None and m is not None and m.to != cmd.actor:
        problem = Rejection("ack-not-recipient", "only the recipient may ack a message", ("actor",))
    elif problem is None and m is not None and m.acked_by is not None:
        problem = Rejection(
            "ack-duplicate", "this message was already acknowledged", ("messageId",)
        )
    if problem is not None:
        return rejected("ack", problem, at), problem
    event = MessageAcked(
        type="message.acked",
        at=at,
        actor_id=cmd.actor,
        message_id=cmd.message_id,
        note=cmd.note,
        meaning=ACK_MEANING,
    )
    return event, {"messageId": cmd.message_id, "ackedBy": cmd.actor, "meaning": ACK_MEANING}


def _decide_heartbeat(state: State, cmd: HeartbeatInput, at: str) -> tuple[Event, Result]:
    problem = _unknown(state, {"actor": cmd.actor})
    if problem is not None:
        return rejected("heartbeat", problem, at), problem
    event = ActorHeartbeat(type="actor.heartbeat", at=at, actor_id=cmd.actor, status=cmd.status)
    return event, {"actor": cmd.actor, "at": at}


def decide(state: State, cmd: VerbInput, at: str) -> tuple[Event, Result]:
    """Decide one verb: the event to append and the caller's result (or a :class:`Rejection`)."""
    if isinstance(cmd, RegisterInput):
        return _decide_register(state, cmd, at)
    if isinstance(cmd, SendInput | HandoffInput):
        return _decide_send(state, cmd, at)
    if isinstance(cmd, InboxInput):
        return _decide_inbox(state, cmd, at)
    if isinstance(cmd, AckInput):
        return _decide_ack(state, cmd, at)
    return _decide_heartbeat(state, cmd, at)


def denial_echo(sent: MessageSent, at: str) -> AuthorityDenied:
    """The ``authority.denied`` audit event that follows a send with denied authority."""
    m = sent.message
    return AuthorityDenied(
        type="authority.denied",
        at=at,
        actor_id=m.sender,
        message_id=m.message_id,
        denied=list(m.authority.denied),
    )
