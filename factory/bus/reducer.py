"""The pure core of the bus: replay events into a state, decide verbs into events (B-1, B-3).

No I/O and no clock: the caller passes ``at`` (a :data:`~factory.bus.model.Timestamp`).

* :func:`check` decides whether an event may follow a state (raises :class:`ReplayError`
  naming the rule); :func:`apply` checks, then mutates the state in place — the caller owns
  the state object, and a failed check leaves it untouched.
* :func:`decide` maps a validated verb input to ``(event, result)``; it never mutates. A
  refused verb becomes a ``command.rejected`` event and a :class:`Rejection` result, so the
  refusal is itself on the record. Every event :func:`decide` returns passes :func:`check`.

Rules enforced on replay (each a :class:`ReplayError` code): ids are minted in order with no
gap (``id-out-of-order``) or duplicate (``duplicate-id``); every address is a registered, minted ref
(``unknown-actor``); a new correlation id lies above the high-water mark and within the claim
window (``correlation-out-of-range``); only the recipient acks (``ack-not-recipient``), only a
known message (``ack-unknown-message``), once (``ack-duplicate``); a registration carries the
frozen bus authority (schema) and a known name keeps its ref and kind; an ``authority.denied``
echo matches its message (``denial-mismatch``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from factory.bus.model import (
    ACK_MEANING,
    ACTOR_PREFIX,
    BUS_AUTHORITY,
    CLAIM_WINDOW,
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
    parse_ref,
)


class ReplayError(Exception):
    """An event that cannot follow the state; ``code`` is stable kebab-case."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class ActorState:
    ref: str
    name: str
    kind: str
    last_seen: str


@dataclass(slots=True)
class MessageState:
    """What later events need about a message; the text is kept only while unacknowledged."""

    message_id: str
    correlation_id: str
    sender: str
    to: str
    kind: str
    handoff: bool
    denied: tuple[str, ...]
    acked_by: str | None = None
    body: Message | None = None


@dataclass(slots=True)
class State:
    """Replayed bus state. High-water marks only grow (ids are never re-minted)."""

    events: int = 0
    actors: dict[str, ActorState] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    messages: dict[str, MessageState] = field(default_factory=dict)
    pending: dict[str, dict[str, None]] = field(default_factory=dict)
    correlations: dict[str, int] = field(default_factory=dict)
    actor_hwm: int = 0
    message_hwm: int = 0
    correlation_hwm: int = 0
    handoffs: int = 0
    acks: int = 0
    rejections: int = 0
    denials: int = 0
    polls: int = 0
    heartbeats: int = 0


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused verb: ``reason`` is the stable code recorded in ``command.rejected``."""

    reason: str
    message: str
    fields: tuple[str, ...] = ()


Result = dict[str, Any] | Rejection


# --- replay ------------------------------------------------------------------------------


def _need_actor(state: State, ref: str | None, role: str) -> None:
    if ref is not None and ref not in state.actors:
        raise ReplayError("unknown-actor", f"{role} {ref} is not a registered, minted actor ref")


def _check_message(state: State, msg: Message) -> None:
    expected = mint(MESSAGE_PREFIX, state.message_hwm + 1)
    if msg.message_id != expected:
        ordinal = parse_ref(msg.message_id, MESSAGE_PREFIX)
        if ordinal is not None and ordinal <= state.message_hwm:
            raise ReplayError("duplicate-id", f"{msg.message_id} was already minted")
        raise ReplayError(
            "id-out-of-order", f"{msg.message_id} is not the next message id {expected}"
        )
    _need_actor(state, msg.sender, "from")
    _need_actor(state, msg.to, "to")
    _need_actor(state, msg.reply_to, "replyTo")
    if msg.correlation_id not in state.correlations:
        cor = parse_ref(msg.correlation_id, CORRELATION_PREFIX)
        if (
            cor is None
            or cor <= state.correlation_hwm
            or cor > state.correlation_hwm + CLAIM_WINDOW
        ):
            raise ReplayError(
                "correlation-out-of-range",
                f"new correlation {msg.correlation_id} is not within the claim window",
            )
    auth = msg.authority
    if auth.denied or auth.granted != auth.requested:
        requested = set(auth.requested)
        if set(auth.granted) | set(auth.denied) != requested or set(auth.denied) & set(GRANTABLE):
            raise ReplayError(
                "authority-mismatch",
                f"{msg.message_id}: granted/denied do not partition requested",
            )


def _check_registered(state: State, event: ActorRegistered) -> None:
    known = state.names.get(event.name)
    if event.is_new:
        if event.ref != mint(ACTOR_PREFIX, state.actor_hwm + 1):
            ordinal = parse_ref(event.ref, ACTOR_PREFIX)
            if ordinal is not None and ordinal <= state.actor_hwm:
                raise ReplayError("duplicate-id", f"{event.ref} was already minted")
            raise ReplayError("id-out-of-order", f"{event.ref} is not the next actor ref")
        if known is not None:
            raise ReplayError("duplicate-name", f"{event.name} is already registered as {known}")
    elif known != event.ref or state.actors[known].kind != event.kind:
        raise ReplayError(
            "unknown-actor", f"re-registration of {event.name} does not match {known}"
        )


def _check_sent(state: State, event: MessageSent) -> None:
    _check_message(state, event.message)
    if event.message.kind == "handoff":
        raise ReplayError("handoff-as-message", "a handoff must be recorded as work.handed-off")


def _check_handoff(state: State, event: WorkHandedOff) -> None:
    _check_message(state, event.message)
    if event.message.kind != "handoff" or event.message.authority.requested:
        raise ReplayError(
            "handoff-authority", "a handoff message must be kind handoff with no authority"
        )


def _check_polled(state: State, event: InboxPolled) -> None:
    _need_actor(state, event.actor_id, "actorId")
    pending = state.pending.get(event.actor_id, {})
    for mid in event.message_ids:
        if mid not in pending:
            raise ReplayError("inbox-mismatch", f"{mid} is not pending for {event.actor_id}")


def _check_acked(state: State, event: MessageAcked) -> None:
    _need_actor(state, event.actor_id, "actorId")
    m = state.messages.get(event.message_id)
    if m is None:
        raise ReplayError("ack-unknown-message", f"ack of unknown message {event.message_id}")
    if m.to != event.actor_id:
        raise ReplayError(
            "ack-not-recipient",
            f"{event.actor_id} acked {event.message_id} addressed to {m.to}",
        )
    if m.acked_by is not None:
        raise ReplayError("ack-duplicate", f"{event.message_id} was already acked")


def _check_heartbeat(state: State, event: ActorHeartbeat) -> None:
    _need_actor(state, event.actor_id, "actorId")


def _check_denied(state: State, event: AuthorityDenied) -> None:
    m = state.messages.get(event.message_id)
    if m is None or m.sender != event.actor_id or tuple(event.denied) != m.denied:
        raise ReplayError("denial-mismatch", f"authority.denied does not match {event.message_id}")


def _check_rejected(state: State, event: CommandRejected) -> None:
    """Always admissible: a refusal changes nothing but a counter."""


_CHECKS: dict[type, Callable[[State, Any], None]] = {
    ActorRegistered: _check_registered,
    MessageSent: _check_sent,
    WorkHandedOff: _check_handoff,
    InboxPolled: _check_polled,
    MessageAcked: _check_acked,
    ActorHeartbeat: _check_heartbeat,
    AuthorityDenied: _check_denied,
    CommandRejected: _check_rejected,
}


def check(state: State, event: Event) -> None:
    """Raise :class:`ReplayError` unless ``event`` may follow ``state``. Never mutates."""
    _CHECKS[type(event)](state, event)


def _record_message(state: State, msg: Message, handoff: bool) -> None:
    state.message_hwm += 1
    if msg.correlation_id in state.correlations:
        state.correlations[msg.correlation_id] += 1
    else:
        cor = parse_ref(msg.correlation_id, CORRELATION_PREFIX) or 0
        state.correlation_hwm = max(state.correlation_hwm, cor)
        state.correlations[msg.correlation_id] = 1
    state.messages[msg.message_id] = MessageState(
        message_id=msg.message_id,
        correlation_id=msg.correlation_id,
        sender=msg.sender,
        to=msg.to,
        kind=msg.kind,
        handoff=handoff,
        denied=tuple(msg.authority.denied),
        body=msg,
    )
    state.pending.setdefault(msg.to, {})[msg.message_id] = None


def _apply_registered(state: State, event: ActorRegistered) -> None:
    if event.is_new:
        state.actor_hwm += 1
        state.names[event.name] = event.ref
        state.actors[event.ref] = ActorState(event.ref, event.name, event.kind, event.at)
    else:
        state.actors[event.ref].last_seen = event.at


def _apply_sent(state: State, event: MessageSent) -> None:
    _record_message(state, event.message, handoff=False)


def _apply_handoff(state: State, event: WorkHandedOff) -> None:
    _record_message(state, event.message, handoff=True)
    state.handoffs += 1


def _apply_polled(state: State, event: InboxPolled) -> None:
    state.polls += 1
    state.actors[event.actor_id].last_seen = event.at


def _apply_acked(state: State, event: MessageAcked) -> None:
    m = state.messages[event.message_id]
    m.acked_by = event.actor_id
    m.body = None  # the text is only needed while the message is pending
    del state.pending[m.to][m.message_id]
    state.acks += 1


def _apply_heartbeat(state: State, event: ActorHeartbeat) -> None:
    state.heartbeats += 1
    state.actors[event.actor_id].last_seen = event.at


def _apply_denied(state: State, event: AuthorityDenied) -> None:
    state.denials += 1


def _apply_rejected(state: State, event: CommandRejected) -> None:
    state.rejections += 1


_APPLY: dict[type, Callable[[State, Any], None]] = {
    ActorRegistered: _apply_registered,
    MessageSent: _apply_sent,
    WorkHandedOff: _apply_handoff,
    InboxPolled: _apply_polled,
    MessageAcked: _apply_acked,
    ActorHeartbeat: _apply_heartbeat,
    AuthorityDenied: _apply_denied,
    CommandRejected: _apply_rejected,
}


def apply(state: State, event: Event) -> None:
    """Check ``event`` against ``state`` (:func:`check`), then fold it into ``state``."""
    kind = type(event)
    _CHECKS[kind](state, event)
    state.events += 1
    _APPLY[kind](state, event)


def replay(events: list[Event]) -> State:
    """Fold ``events`` from the empty state (raises :class:`ReplayError` at the first bad one)."""
    state = State()
    for event in events:
        apply(state, event)
    return state


def state_digest(state: State) -> str:
    """SHA-256 hex over a fixed rendering of the replayed state (for the determinism check)."""
    h = hashlib.sha256()
    h.update(
        repr(
            (
                state.events,
                state.actor_hwm,
                state.message_hwm,
                state.correlation_hwm,
                state.handoffs,
                state.acks,
                state.rejections,
                state.denials,
                state.polls,
                state.heartbeats,
                sorted((a.ref, a.name, a.kind, a.last_seen) for a in state.actors.values()),
                sorted(state.correlations.items()),
            )
        ).encode()
    )
    for m in state.messages.values():
        h.update(f"{m.message_id}|{m.correlation_id}|{m.sender}|{m.to}|{m.acked_by}\n".encode())
    return h.hexdigest()


# --- decide ------------------------------------------------------------------------------


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
    if claimed in state.correlations:
        return claimed
    ordinal = parse_ref(claimed, CORRELATION_PREFIX)
    if (
        ordinal is None
        or ordinal <= state.correlation_hwm
        or ordinal > state.correlation_hwm + CLAIM_WINDOW
    ):
        return Rejection(
            "correlation-out-of-range",
            "correlationId must name an existing thread or a new id just above the last one; "
            "omit it to mint one",
            ("correlationId",),
        )
    return claimed


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
