"""The bus's MCP stdio transport: every request it reads is answered before it stops.

The SDK's own ``stdio_server`` closes the session as soon as stdin reaches EOF, and the
SDK's dispatcher then cancels the handlers still in flight: a tool call written just before
the client closed its end could be committed to the event log and never answered (issue 24
§5). This transport differs from the SDK's in three ways only:

* at EOF (or Ctrl-C, which ends the input the same way) it keeps the session open until
  every request it passed on has settled: its response is written, or the dispatcher
  settled it unanswered (the client cancelled it: ``on_request_unanswered``);
* each line is screened first (:func:`factory.bus.wire.screen_line`); a line that repeats
  a key is answered here with a JSON-RPC ``-32600`` error and never reaches the SDK;
* a failed write to stdout (the client is gone) settles everything: nobody is left to
  answer, so EOF is not kept waiting.

Framing is the SDK's: one JSON-RPC message per line, parsed with its message adapter,
written with ``model_dump_json(by_alias=True, exclude_unset=True)``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio

from factory.bus.wire import WireRefusal, screen_line

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage


class Unanswered:
    """The requests passed on to the server and not yet settled, by id."""

    def __init__(self) -> None:
        self._open: Counter[int | str] = Counter()
        self._idle = anyio.Event()
        self._idle.set()
        self.broken = False

    def opened(self, ident: int | str) -> None:
        if self.broken:
            return
        if not self._open:
            self._idle = anyio.Event()
        self._open[ident] += 1

    def settled(self, ident: int | str | None) -> None:
        if ident is None or ident not in self._open:
            return  # a late answer to a request already settled, or never passed on
        self._open[ident] -= 1
        if self._open[ident] == 0:
            del self._open[ident]
        if not self._open:
            self._idle.set()

    def abandon(self) -> None:
        """The wire is gone: nothing can be answered any more."""
        self.broken = True
        self._open.clear()
        self._idle.set()

    async def drained(self) -> None:
        await self._idle.wait()


async def _read(
    source: BinaryIO,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    to_wire: MemoryObjectSendStream[SessionMessage],
    pending: Unanswered,
) -> None:
    """Pass each screened line on to the server until EOF, then wait for every answer."""
    import mcp_types as types
    from mcp.shared.message import ServerMessageMetadata, SessionMessage

    async with to_server, to_wire:
        async for raw in anyio.wrap_file(source):
            line = screen_line(raw)
            if isinstance(line, WireRefusal):
                error = types.ErrorData.model_validate(line.error())
                refusal = types.JSONRPCError(jsonrpc="2.0", id=line.ident, error=error)
                await to_wire.send(SessionMessage(refusal))
                continue
            try:
                text = line.decode("utf-8", "replace")  # as the SDK's own stdin reader
                message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
            except Exception as exc:
                await to_server.send(exc)
                continue
            metadata = None
            if isinstance(message, types.JSONRPCRequest):
                ident = message.id
                pending.opened(ident)

                async def unanswered(ident: int | str = ident) -> None:
                    pending.settled(ident)

                metadata = ServerMessageMetadata(on_request_unanswered=unanswered)
            await to_server.send(SessionMessage(message, metadata))
        await pending.drained()  # EOF: every request passed on is answered first


async def _write(
    from_server: MemoryObjectReceiveStream[SessionMessage],
    sink: BinaryIO,
    pending: Unanswered,
) -> None:
    """Write each message as one line; a response settles its request once flushed."""
    import mcp_types as types

    out = anyio.wrap_file(sink)
    async with from_server:
        async for item in from_server:
            if pending.broken:
                continue  # keep draining: the server must not block on a dead wire
            message = item.message
            data = message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                await out.write(data.encode("utf-8") + b"\n")
                await out.flush()
            except (OSError, ValueError):
                pending.abandon()
                continue
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                pending.settled(message.id)


async def serve_stdio(server: Any, source: BinaryIO, sink: BinaryIO) -> None:
    """Run the low-level ``server`` (the SDK's ``Server``) over ``source``/``sink`` until
    ``source`` ends and every request read from it has settled."""
    from mcp.shared.message import SessionMessage

    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    pending = Unanswered()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_read, source, to_server, server_out.clone(), pending)
        tg.start_soon(_write, from_server, sink, pending)
        await server.run(server_in, server_out, server.create_initialization_options())
