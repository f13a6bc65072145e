"""What each bus verb answers on success: the MCP tools' output schemas (issue 9 §5).

The verbs' results are built by :mod:`factory.bus.decide` as plain JSON values; these
models describe them, so the server can declare an ``outputSchema`` per tool (MCP clients
validate a successful result against it) and the tests can check that every result the
decide step builds conforms (``tests/bus/test_results.py``). A refused call answers with
``isError`` and ``{error, message, fields}`` instead, which clients do not validate.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from factory.bus.model import (
    ActorRef,
    Authority,
    BusAuthority,
    CorrelationRef,
    Message,
    MessageRef,
    Name,
    Timestamp,
    Token,
)
from factory.models import StrictModel


class RegisterResult(StrictModel):
    """``register``: your actor ref; the same name again returns the same ref."""

    ref: ActorRef
    name: Name
    kind: Token
    is_new: bool = Field(alias="isNew")
    bus_authority: BusAuthority = Field(alias="busAuthority")


class SendResult(StrictModel):
    """``send``: the minted message and thread ids, and what authority was granted/denied."""

    message_id: MessageRef = Field(alias="messageId")
    correlation_id: CorrelationRef = Field(alias="correlationId")
    trust: Literal["untrusted-text"]
    authority: Authority


class MessageView(Message):
    """A pending message as ``inbox`` shows it: the recorded message and its sender's name."""

    from_name: Name = Field(alias="fromName")


class InboxResult(StrictModel):
    """``inbox``: the actor's unacknowledged messages, oldest first (text is untrusted)."""

    actor: ActorRef
    messages: list[MessageView]
    notice: str


class AckResult(StrictModel):
    """``ack``: receipt only, and it says so."""

    message_id: MessageRef = Field(alias="messageId")
    acked_by: ActorRef = Field(alias="ackedBy")
    meaning: str


class HandoffResult(StrictModel):
    """``handoff``: the handed-off message; ``authorityTransferred`` is always empty."""

    message_id: MessageRef = Field(alias="messageId")
    correlation_id: CorrelationRef = Field(alias="correlationId")
    trust: Literal["untrusted-text"]
    authority_transferred: tuple[()] = Field(alias="authorityTransferred")
    reply_to: ActorRef | None = Field(alias="replyTo")
    notice: str


class HeartbeatResult(StrictModel):
    """``heartbeat``: the time the bus recorded."""

    actor: ActorRef
    at: Timestamp


VERB_RESULTS: Final[dict[str, type[StrictModel]]] = {
    "ack": AckResult,
    "handoff": HandoffResult,
    "heartbeat": HeartbeatResult,
    "inbox": InboxResult,
    "register": RegisterResult,
    "send": SendResult,
}


def output_schemas() -> dict[str, dict[str, Any]]:
    """Verb → JSON schema of its successful result (published key names)."""
    return {
        verb: model.model_json_schema(by_alias=True, mode="serialization")
        for verb, model in VERB_RESULTS.items()
    }
