"""The pure core of the bus: replay events into a state (SPEC B-1, B-3).

No I/O and no clock. :func:`check` decides whether an event may follow a state (raises
:class:`ReplayError` naming the rule); :func:`apply` checks, then folds the event into the
state in place — the caller owns the state object, and a failed check leaves it untouched.
Deciding verbs lives in :mod:`factory.bus.decide`.

Rules enforced on replay (each a :class:`ReplayError` code): ids are minted in order with
no gap (``id-out-of-order``) or duplicate (``duplicate-id``); every address is a
registered, minted ref (``unknown-actor``); a new correlation id lies above the high-water
mark and within the claim window (``correlation-out-of-range``); only the recipient acks
(``ack-not-recipient``), only a known message (``ack-unknown-message``), once
(``ack-duplicate``); a known name keeps its ref and kind; granted and denied partition the
requested authority (``authority-mismatch``); an ``authority.denied`` echo matches its
message (``denial-mismatch``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from factory.bus.model import (
    ACTOR_PREFIX,
    CLAIM_WINDOW,
    CORRELATION_PREFIX,
    GRANTABLE,
    MESSAGE_PREFIX,
    ActorHeartbeat,
    ActorRegistered,
    AuthorityDenied,
    CommandRejected,
    Event,
    InboxPolled,
    Message,
    MessageAcked,
    MessageSent,
    WorkHandedOff,
    mint,
    parse_ref,
)
from factory.errors import Code, CorruptLog


class ReplayError(Exception):
    """An event that cannot follow the state; ``code`` is the registered replay rule.

    Not itself a :class:`~factory.errors.FactoryError`: the log turns it into a
    :class:`~factory.errors.CorruptLog` with the same code and the line number."""

    def __init__(self, code: Code[CorruptLog], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


NEVER_REPAIRED = "the log is never repaired: keep it as evidence and start a new data dir"
_define = CorruptLog.define
UNKNOWN_ACTOR = _define("unknown-actor", NEVER_REPAIRED)
DUPLICATE_ID = _define("duplicate-id", NEVER_REPAIRED)
ID_OUT_OF_ORDER = _define("id-out-of-order", NEVER_REPAIRED)
CORRELATION_OUT_OF_RANGE = _define("correlation-out-of-range", NEVER_REPAIRED)
AUTHORITY_MISMATCH = _define("authority-mismatch", NEVER_REPAIRED)
DUPLICATE_NAME = _define("duplicate-name", NEVER_REPAIRED)
HANDOFF_AS_MESSAGE = _define("handoff-as-message", NEVER_REPAIRED)
HANDOFF_AUTHORITY = _define("handoff-authority", NEVER_REPAIRED)
INBOX_MISMATCH = _define("inbox-mismatch", NEVER_REPAIRED)
ACK_UNKNOWN_MESSAGE = _define("ack-unknown-message", NEVER_REPAIRED)
ACK_NOT_RECIPIENT = _define("ack-not-recipient", NEVER_REPAIRED)
ACK_DUPLICATE = _define("ack-duplicate", NEVER_REPAIRED)
DENIAL_MISMATCH = _define("denial-mismatch", NEVER_REPAIRED)


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
    keep_bodies: bool = True  # False for verification: only a live server serves inboxes
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
        raise ReplayError(UNKNOWN_ACTOR, f"{role} {ref} is not a registered, minted actor ref")


def _check_message(state: State, msg: Message) -> None:
    expected = mint(MESSAGE_PREFIX, state.message_hwm + 1)
    if msg.message_id != expected:
        ordinal = parse_ref(msg.message_id, MESSAGE_PREFIX)
        if ordinal is not None and ordinal <= state.message_hwm:
            raise ReplayError(DUPLICATE_ID, f"{msg.message_id} was already minted")
        raise ReplayError(
            ID_OUT_OF_ORDER, f"{msg.message_id} is not the next message id {expected}"
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
                CORRELATION_OUT_OF_RANGE,
                f"new correlation {msg.correlation_id} is not within the claim window",
            )
    auth = msg.authority
    if auth.denied or auth.granted != auth.requested:
        requested = set(auth.requested)
        if set(auth.granted) | set(auth.denied) != requested or set(auth.denied) & set(GRANTABLE):
            raise ReplayError(
                AUTHORITY_MISMATCH,
                f"{msg.message_id}: granted/denied do not partition requested",
            )


def _check_registered(state: State, event: ActorRegistered) -> None:
    known = state.names.get(event.name)
    if event.is_new:
        if event.ref != mint(ACTOR_PREFIX, state.actor_hwm + 1):
            ordinal = parse_ref(event.ref, ACTOR_PREFIX)
            if ordinal is not None and ordinal <= state.actor_hwm:
                raise ReplayError(DUPLICATE_ID, f"{event.ref} was already minted")
            raise ReplayError(ID_OUT_OF_ORDER, f"{event.ref} is not the next actor ref")
        if known is not None:
            raise ReplayError(DUPLICATE_NAME, f"{event.name} is already registered as {known}")
    elif known != event.ref or state.actors[known].kind != event.kind:
        raise ReplayError(UNKNOWN_ACTOR, f"re-registration of {event.name} does not match {known}")


def _check_sent(state: State, event: MessageSent) -> None:
    _check_message(state, event.message)
    if event.message.kind == "handoff":
        raise ReplayError(HANDOFF_AS_MESSAGE, "a handoff must be recorded as work.handed-off")


def _check_handoff(state: State, event: WorkHandedOff) -> None:
    _check_message(state, event.message)
    if event.message.kind != "handoff" or event.message.authority.requested:
        raise ReplayError(
            HANDOFF_AUTHORITY, "a handoff message must be kind handoff with no authority"
        )


def _check_polled(state: State, event: InboxPolled) -> None:
    _need_actor(state, event.actor_id, "actorId")
    pending = state.pending.get(event.actor_id, {})
    for mid in event.message_ids:
        if mid not in pending:
            raise ReplayError(INBOX_MISMATCH, f"{mid} is not pending for {event.actor_id}")


def _check_acked(state: State, event: MessageAcked) -> None:
    _need_actor(state, event.actor_id, "actorId")
    m = state.messages.get(event.message_id)
    if m is None:
        raise ReplayError(ACK_UNKNOWN_MESSAGE, f"ack of unknown message {event.message_id}")
    if m.to != event.actor_id:
        raise ReplayError(
            ACK_NOT_RECIPIENT,
            f"{event.actor_id} acked {event.message_id} addressed to {m.to}",
        )
    if m.acked_by is not None:
        raise ReplayError(ACK_DUPLICATE, f"{event.message_id} was already acked")


def _check_heartbeat(state: State, event: ActorHeartbeat) -> None:
    _need_actor(state, event.actor_id, "actorId")


def _check_denied(state: State, event: AuthorityDenied) -> None:
    m = state.messages.get(event.message_id)
    if m is None or m.sender != event.actor_id or tuple(event.denied) != m.denied:
        raise ReplayError(DENIAL_MISMATCH, f"authority.denied does not match {event.message_id}")


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
        body=msg if state.keep_bodies else None,
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
