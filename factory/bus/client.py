"""Drive a spawned ``factory bus serve`` through the MCP SDK's ``ClientSession`` (SPEC B-6).

Two transports reach the same session code:

* ``prespawned`` (default): the server was started by the tracer right after it claimed
  the data dir (:mod:`factory.bus.spawn`), before pydantic, anyio or the client-side SDK
  modules were imported, so the two start-ups overlap instead of adding up; the SDK
  session is wired to the child's pipes with MCP's stdio framing (one JSON-RPC message per
  line), read and written without blocking.
* ``sdk-stdio``: the SDK's own ``mcp.client.stdio.stdio_client`` spawns the server (the
  import happens first, then the spawn). Kept for comparison in ``scripts/bench_bus``.

The child gets an allow-listed environment (:func:`server_env`), never the caller's whole
environment.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

from factory.bus.smoke_report import (
    Artifact,
    Trace,
    TraceAck,
    TraceActor,
    TraceHandoff,
    TraceMessage,
)
from factory.bus.spawn import (
    BACKENDS,
    SERVER_LOG,
    TRANSPORTS,
    ServerChild,
    server_argv,
    server_env,
    spawn_server,
)
from factory.errors import Failure

SESSION_TIMEOUT_S: Final = 120.0


class BusCallFailed(Failure):
    """A bus call the tracer depends on failed or the server went away (exit 4)."""


BUS_CALL_FAILED = BusCallFailed.define(
    "bus-call-failed", f"read the server's log ({SERVER_LOG} in the data dir)", default=True
)


Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


async def _read_lines(fd: int) -> AsyncIterator[bytes]:
    """The non-blank lines the child writes on ``fd`` (non-blocking, cancellable)."""
    import anyio

    os.set_blocking(fd, False)
    buffer = b""
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            return
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield line


async def _write_all(fd: int, data: bytes) -> None:
    import anyio

    view = memoryview(data)
    while view:
        await anyio.wait_writable(fd)
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue


def _preload() -> None:
    """Import, while the server starts, what the session needs later: the SDK's client side,
    the validator the session compiles for the first tool result, the bus verification."""
    from factory.bus.sdk import bare_packages

    bare_packages()
    import jsonschema.validators  # noqa: F401
    import mcp.client.session  # noqa: F401

    import factory.bus.verify  # noqa: F401


@asynccontextmanager
async def _prespawned(server: ServerChild) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK session's streams over the pipes of ``server`` (started earlier by the
    tracer, :func:`factory.bus.spawn.spawn_server`): MCP's stdio framing, one JSON-RPC
    message per line. Closing ends the child's input; :meth:`ServerChild.stop` ends it."""
    import anyio

    _preload()
    import mcp_types
    from mcp.shared.message import SessionMessage

    to_session, session_reads = anyio.create_memory_object_stream[Any](0)
    session_writes, from_session = anyio.create_memory_object_stream[Any](0)
    assert server.process.stdout is not None and server.process.stdin is not None
    stdout, stdin = server.process.stdout.fileno(), server.process.stdin.fileno()
    os.set_blocking(stdin, False)

    async def pump_out() -> None:
        async with to_session:
            async for line in _read_lines(stdout):
                msg = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                await to_session.send(SessionMessage(msg))

    async def pump_in() -> None:
        async with from_session:
            async for item in from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await _write_all(stdin, data.encode("utf-8") + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_out)
        tg.start_soon(pump_in)
        try:
            yield session_reads, session_writes
        finally:
            await session_writes.aclose()
            server.process.stdin.close()
            tg.cancel_scope.cancel()


@asynccontextmanager
async def _sdk_stdio(data_dir: Path) -> AsyncIterator[tuple[Any, Any]]:
    from factory.bus.sdk import bare_packages

    bare_packages()
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = server_argv(data_dir)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    with open(data_dir / SERVER_LOG, "ab") as errlog:
        stderr: Any = errlog  # the child's stderr: any file with a descriptor
        async with stdio_client(params, errlog=stderr) as (read, write):
            yield read, write


async def _trace(
    data_dir: Path, task: str, artifact: Artifact, server: ServerChild | None
) -> Trace:
    import anyio

    opened = _sdk_stdio(data_dir) if server is None else _prespawned(server)
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with opened as (read, write):
            from factory.bus.sdk import bare_packages

            bare_packages()
            from mcp.client.session import ClientSession

            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                surface = sorted(tool.name for tool in listed.tools)

                async def call(verb: str, args: dict[str, Any]) -> dict[str, Any]:
                    result = await session.call_tool(verb, args)
                    payload = result.structured_content
                    if result.is_error or not isinstance(payload, dict):
                        reason = payload.get("error") if isinstance(payload, dict) else "no result"
                        raise BusCallFailed(
                            f"bus verb {verb} failed ({reason}), logged in {data_dir / SERVER_LOG}"
                        )
                    return payload

                return await exchange(call, task, artifact, surface)


class _Conversation:
    """The tracer's side of the conversation: every message it sent and every ack."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.messages: list[TraceMessage] = []
        self.acks: list[TraceAck] = []

    async def send(
        self, frm: str, to: str, kind: str, text: str, cor: str | None, **extra: Any
    ) -> str:
        args = {"from": frm, "to": to, "kind": kind, "text": text, **extra}
        if cor is not None:
            args["correlationId"] = cor
        sent = await self.call("send", args)
        self.messages.append(
            TraceMessage(
                message_id=sent["messageId"],
                correlation_id=sent["correlationId"],
                sender=frm,
                to=to,
                kind=kind,
            )
        )
        return str(sent["correlationId"])

    async def receive(self, actor: str) -> None:
        inbox = await self.call("inbox", {"actor": actor})
        for msg in inbox["messages"]:
            ack = await self.call("ack", {"actor": actor, "messageId": msg["messageId"]})
            self.acks.append(
                TraceAck(
                    message_id=ack["messageId"], acked_by=ack["ackedBy"], meaning=ack["meaning"]
                )
            )


_ACTORS: Final = (
    ("coordinator", "factory-coordinator", "coordinator"),
    ("builder", "factory-builder", "worker"),
    ("reviewer", "factory-reviewer", "reviewer"),
)


async def exchange(call: Call, task: str, artifact: Artifact, surface: list[str]) -> Trace:
    """The tracer's conversation (16 calls, 16 events) over any ``call`` implementation;
    ``surface`` is the tool list the server announced."""
    actors = {}
    for role, name, kind in _ACTORS:
        reg = await call("register", {"name": name, "kind": kind})
        actors[role] = TraceActor(ref=reg["ref"], name=name, kind=kind)
    coord, builder, reviewer = (actors[r].ref for r in ("coordinator", "builder", "reviewer"))
    talk = _Conversation(call)
    cor = await talk.send(
        coord,
        builder,
        "factory-task",
        task,
        None,
        expectsReply=True,
        requestedAuthority=["read", "report"],
    )
    await talk.receive(builder)
    candidate = (
        f"artifact-candidate {artifact.path} bytes={artifact.bytes} sha256={artifact.sha256}"
    )
    await talk.send(builder, coord, "artifact-candidate", candidate, cor)
    await talk.receive(coord)
    handed = await call(
        "handoff",
        {
            "from": builder,
            "to": reviewer,
            "replyTo": coord,
            "correlationId": cor,
            "summary": f"review {artifact.sha256}",
        },
    )
    await talk.receive(reviewer)
    verdict = "SMOKE_ACCEPT (scope: coordination path only)"
    await talk.send(reviewer, coord, "review-verdict", verdict, cor)
    await talk.receive(coord)
    await call("heartbeat", {"actor": coord, "status": "trace complete"})
    return Trace(
        actors=actors,
        messages=talk.messages,
        acknowledgements=talk.acks,
        handoff=TraceHandoff(
            message_id=handed["messageId"],
            correlation_id=handed["correlationId"],
            sender=builder,
            to=reviewer,
            reply_to=coord,
            authority_transferred=handed["authorityTransferred"],
        ),
        correlation_id=cor,
        tool_surface=surface,
    )


def run_trace(
    data_dir: Path,
    *,
    task: str,
    artifact: Artifact,
    transport: str = "prespawned",
    backend: str = "asyncio",
    server: ServerChild | None = None,
) -> Trace:
    """Run :func:`exchange` against a server on ``data_dir`` (anyio; asyncio or trio).

    ``prespawned`` talks to ``server`` (spawned here when not given); either way the server
    is stopped (:meth:`ServerChild.stop`) before this returns or raises. ``sdk-stdio``
    lets the SDK spawn and stop it.

    Raises:
        BusCallFailed: a call failed or the server went away.
        Failure: any other typed failure from the session (e.g. ``bus-lock-timeout``).
    """
    if transport not in TRANSPORTS or backend not in BACKENDS:
        raise ValueError(f"unknown transport {transport} or backend {backend}")
    if transport == "prespawned" and server is None:
        server = spawn_server(data_dir)
    talk_to = server if transport == "prespawned" else None
    try:
        return _run(data_dir, task, artifact, backend, talk_to)
    finally:
        if server is not None:
            server.stop()


def _run(
    data_dir: Path, task: str, artifact: Artifact, backend: str, server: ServerChild | None
) -> Trace:
    import anyio

    try:
        result: Trace = anyio.run(_trace, data_dir, task, artifact, server, backend=backend)
    except BaseException as exc:
        leaf = _leaf(exc)
        if isinstance(leaf, Failure | KeyboardInterrupt):
            raise leaf from None
        raise BusCallFailed(
            f"the bus session failed ({type(leaf).__name__}: {leaf}), logged in "
            f"{data_dir / SERVER_LOG}"
        ) from leaf
    return result


def _leaf(exc: BaseException) -> BaseException:
    """The most telling exception inside (possibly nested) exception groups."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = [_leaf(e) for e in exc.exceptions]
    for kind in (Failure, KeyboardInterrupt):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0]
