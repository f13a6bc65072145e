"""Drive a spawned ``factory bus serve`` through the MCP SDK's ``ClientSession`` (SPEC B-6).

Two transports reach the same session code:

* ``prespawned`` (default): the server is started *before* the client-side SDK modules are
  imported, so the two ~0.7 s imports overlap instead of adding up; the SDK session is
  wired to the child's pipes with MCP's stdio framing (one JSON-RPC message per line).
* ``sdk-stdio``: the SDK's own ``mcp.client.stdio.stdio_client`` spawns the server (the
  import happens first, then the spawn). Kept for comparison in ``scripts/bench_bus``.

The child gets an allow-listed environment (:func:`server_env`), never the caller's whole
environment.
"""

from __future__ import annotations

import os
import subprocess
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
from factory.errors import Failure
from factory.proc.local import checked_argv, local_env

SERVER_LOG: Final = "bus-serve.log"
SESSION_TIMEOUT_S: Final = 120.0


class BusCallFailed(Failure):
    """A bus call the tracer depends on failed or the server went away (exit 4)."""


BUS_CALL_FAILED = BusCallFailed.define(
    "bus-call-failed", f"read the server's log ({SERVER_LOG} in the data dir)", default=True
)


def server_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The server child's environment: the local-command allow-list
    (:func:`factory.proc.local.local_env`), plus unbuffered I/O."""
    return local_env({"PYTHONUNBUFFERED": "1"}, environ=environ)


def server_argv(data_dir: Path) -> list[str]:
    """argv of the bus server child: this interpreter running ``factory bus serve``."""
    from factory.selfexec import factory_argv

    serve = factory_argv("bus", "serve", "--data-dir", os.fspath(data_dir), unbuffered=True)
    return checked_argv(serve)


Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@asynccontextmanager
async def _prespawned(data_dir: Path, errlog: Any) -> AsyncIterator[tuple[Any, Any]]:
    import anyio

    process = await anyio.open_process(
        server_argv(data_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=server_env(),
    )
    # Only now the heavy modules (the SDK, the bus schemas the verification needs later):
    # their import overlaps the server's start-up instead of preceding it.
    from factory.bus.sdk import bare_packages

    bare_packages()
    import mcp_types
    from mcp.shared.message import SessionMessage

    import factory.bus.verify  # noqa: F401

    to_session, session_reads = anyio.create_memory_object_stream[Any](0)
    session_writes, from_session = anyio.create_memory_object_stream[Any](0)
    assert process.stdout is not None and process.stdin is not None
    stdout, stdin = process.stdout, process.stdin

    async def pump_out() -> None:
        buffer = b""
        async with to_session:
            async for chunk in stdout:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        msg = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        await to_session.send(SessionMessage(msg))

    async def pump_in() -> None:
        async with from_session:
            async for item in from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdin.send(data.encode("utf-8") + b"\n")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_out)
            tg.start_soon(pump_in)
            try:
                yield session_reads, session_writes
            finally:
                await session_writes.aclose()
                await stdin.aclose()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, data_dir)


async def _stop(process: Any, data_dir: Path) -> None:
    """Stop the server without waiting out its interpreter shutdown.

    Every call already had its response, and a response is sent only after its event was
    fsync'd; holding the bus lock while signalling proves no commit is in flight, so the
    SIGTERM cannot tear a line.
    """
    if process.returncode is not None:
        return
    from factory.bus.log import EventLog

    with EventLog(data_dir).locked():
        process.terminate()
        await process.wait()


@asynccontextmanager
async def _sdk_stdio(data_dir: Path, errlog: Any) -> AsyncIterator[tuple[Any, Any]]:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = server_argv(data_dir)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    async with stdio_client(params, errlog=errlog) as (read, write):
        yield read, write


async def _trace(data_dir: Path, task: str, artifact: Artifact, transport: str) -> Trace:
    import anyio

    opener = _prespawned if transport == "prespawned" else _sdk_stdio
    with open(data_dir / SERVER_LOG, "ab") as errlog, anyio.fail_after(SESSION_TIMEOUT_S):
        async with opener(data_dir, errlog) as (read, write):
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


TRANSPORTS: Final = ("prespawned", "sdk-stdio")
BACKENDS: Final = ("asyncio", "trio")


def run_trace(
    data_dir: Path,
    *,
    task: str,
    artifact: Artifact,
    transport: str = "prespawned",
    backend: str = "asyncio",
) -> Trace:
    """Run :func:`exchange` against a server spawned on ``data_dir`` (anyio; asyncio or trio).

    Raises:
        BusCallFailed: a call failed or the server went away.
        Failure: any other typed failure from the session (e.g. ``bus-lock-timeout``).
    """
    import anyio

    if transport not in TRANSPORTS or backend not in BACKENDS:
        raise ValueError(f"unknown transport {transport} or backend {backend}")
    try:
        result: Trace = anyio.run(_trace, data_dir, task, artifact, transport, backend=backend)
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
