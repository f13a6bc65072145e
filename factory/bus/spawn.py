"""The tracer's bus server child: started as early as the data dir allows, never left behind.

``factory smoke`` spends most of its time waiting for ``factory bus serve`` to import the MCP
SDK (issue 25). :func:`spawn_server` therefore starts the child right after the data dir is
claimed, before the tracer itself imports pydantic, anyio or the SDK's client side: the two
start-ups overlap on the machine's second core. This module imports only the standard
library and factory's small process helpers, so nothing delays the spawn.

No orphan: the child leads its own process group, and :meth:`ServerChild.stop` ends it
whatever happened before (a completed session, a failed call, a bug, Ctrl-C in the tracer):
under the bus lock, which proves no commit is in flight (a response is sent only after its
event was fsync'd, and a commit holds the lock), it sends SIGTERM and reaps the child; then
it SIGKILLs the group, so no descendant survives either. When the lock cannot be had (the
log is wedged) the group is killed without it: the log's own tail checks then tell a torn
line apart (design/bus.md). The child's environment is an allow-list (:func:`server_env`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from factory.errors import Failure
from factory.proc.local import checked_argv, local_env

SERVER_LOG: Final = "bus-serve.log"
TRANSPORTS: Final = ("prespawned", "sdk-stdio")
BACKENDS: Final = ("asyncio", "trio")
STOP_WAIT_S: Final = 10.0
SERVER_NOT_STARTED = Failure.define(
    "bus-server-not-started",
    f"check that this Python can run 'factory bus serve'; see {SERVER_LOG} in the data dir",
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


class ServerChild:
    """A started ``factory bus serve``: its pipes, and the one way it ends (:meth:`stop`)."""

    def __init__(self, process: subprocess.Popen[bytes], data_dir: Path) -> None:
        self.process = process
        self.data_dir = data_dir
        self.stopped = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        """End the child and every process of its group; idempotent.

        Graceful first (under the bus lock: SIGTERM, reap), then SIGKILL to the group (a
        descendant, or a child the lock could not be had for), even when an interrupt cuts
        the graceful part short. The pipes are closed.
        """
        if self.stopped:
            return
        try:
            self._terminate_under_lock()
        finally:
            self._kill_group()
            self.stopped = True

    def _terminate_under_lock(self) -> None:
        if self.process.poll() is not None:
            return
        from factory.bus.log import EventLog
        from factory.errors import FactoryError

        try:
            with EventLog(self.data_dir).locked():
                self.process.terminate()
                self.process.wait(timeout=STOP_WAIT_S)
        except (FactoryError, OSError, subprocess.TimeoutExpired):
            pass  # the group kill below ends it without the lock

    def _kill_group(self) -> None:
        # The group outlives its leader while a member lives, and its id cannot be reused
        # until then: killing it after the leader was reaped reaches only our descendants.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_WAIT_S)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def spawn_server(data_dir: Path, argv: Sequence[str] | None = None) -> ServerChild:
    """Start ``factory bus serve`` on ``data_dir`` (``argv`` replaces it in tests) in a new
    process group, its stdin and stdout piped to us, its stderr appended to the data dir's
    :data:`SERVER_LOG`.

    Raises:
        Failure: ``bus-server-not-started`` (exit 4) when the program cannot be started.
    """
    command = server_argv(data_dir) if argv is None else checked_argv(argv)
    with open(data_dir / SERVER_LOG, "ab") as errlog:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
                env=server_env(),
                bufsize=0,
                process_group=0,
            )
        except OSError as exc:
            raise SERVER_NOT_STARTED(
                f"the bus server could not be started ({exc.strerror or type(exc).__name__})"
            ) from None
    return ServerChild(process, data_dir)
