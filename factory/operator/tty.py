"""The operator's terminal: the only channel through which authority can enter (SPEC O-3).

:func:`open_terminal` refuses unless standard input is a terminal *and* the process has a
controlling terminal that is that same device. Everything the operator types — the intent
revision, the passphrase — is read from the controlling terminal (``/dev/tty``), never from
stdin, a flag, an environment variable or a file, so a session that drives this process
through a pipe cannot authorize anything.

The passphrase is read with echo off (``termios``: ``ECHO`` cleared, ``ECHONL`` set so the
newline still shows), and the terminal's settings are restored on every exit path. Input
typed ahead of the hidden prompt is discarded (``TCSAFLUSH``). Ctrl-C raises
``KeyboardInterrupt`` as usual (the terminal keeps ``ISIG``); Ctrl-D, or a closed terminal,
raises :class:`PromptClosed`; a hang-up (SIGHUP, wired by the CLI) raises :class:`HungUp`.

There are no prompt timeouts: a person may take their time, and the grant's expiry starts
only after the passphrase has been read.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios
from collections.abc import Iterator
from typing import Final, Protocol

from factory.errors import Refused

LINE_LIMIT: Final = 4096  # bytes of one typed line


class TerminalRefused(Refused):
    """There is no interactive terminal to authorize on (exit 2)."""


TTY_REQUIRED = TerminalRefused.define(
    "tty-required",
    "run it yourself in an interactive terminal; a pipe, flag, variable or file cannot authorize",
)


class PromptClosed(Exception):
    """The terminal reached end of input (Ctrl-D) before a line was finished."""


class HungUp(KeyboardInterrupt):
    """The terminal hung up (SIGHUP): the operator is gone. An interruption like Ctrl-C
    outside a prompt (``interrupted``, exit 130) — never an answer at a prompt, so the
    prompts let it through instead of turning it into ``prompt-cancelled``."""


class Terminal(Protocol):
    """What the operator flow needs from a terminal."""

    def write(self, text: str) -> None: ...

    def read_line(self, prompt: str) -> str: ...

    def read_secret(self, prompt: str) -> bytes: ...


def _refusal(why: str) -> str:
    return (
        f"{why}; run this command yourself in an interactive terminal — authority cannot "
        "come from a pipe, a flag, a variable or a file"
    )


class ControllingTerminal:
    """``/dev/tty``, opened for reading and writing."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(self._fd, data) :]

    def _read_until_newline(self) -> bytes:
        buf = bytearray()
        while True:
            chunk = os.read(self._fd, 1024)
            if not chunk:
                raise PromptClosed
            buf += chunk
            if b"\n" in chunk:
                return bytes(buf[: buf.index(b"\n")])
            if len(buf) > LINE_LIMIT:
                raise PromptClosed

    def read_line(self, prompt: str) -> str:
        self.write(prompt)
        return self._read_until_newline().decode("utf-8", "replace")

    @contextlib.contextmanager
    def _hidden(self) -> Iterator[None]:
        saved = termios.tcgetattr(self._fd)
        hidden = list(saved)
        hidden[3] = (hidden[3] & ~termios.ECHO) | termios.ECHONL
        termios.tcsetattr(self._fd, termios.TCSAFLUSH, hidden)
        try:
            yield
        finally:
            # A terminal that hung up refuses its settings back (EIO): the hang-up, not
            # that, is what ended the prompt.
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, saved)

    def read_secret(self, prompt: str) -> bytes:
        with self._hidden():
            self.write(prompt)
            return self._read_until_newline().removesuffix(b"\r")


def _controlling_tty_number() -> int | None:
    """The device number of the controlling terminal (Linux ``/proc/self/stat`` field 7),
    or ``None`` where it cannot be read (then only the ``/dev/tty`` open decides)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[4])
    except (OSError, ValueError, IndexError):
        return None


def open_terminal(stdin_fd: int = 0) -> ControllingTerminal:
    """The controlling terminal, after checking that stdin is that terminal.

    Raises:
        TerminalRefused: ``tty-required``.
    """
    if sys.stdin is None or not os.isatty(stdin_fd):
        raise TTY_REQUIRED(_refusal("standard input is not a terminal"))
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        raise TTY_REQUIRED(_refusal("the process has no controlling terminal")) from None
    controlling = _controlling_tty_number()
    if controlling is not None and controlling != os.fstat(stdin_fd).st_rdev:
        os.close(fd)
        raise TTY_REQUIRED(_refusal("standard input is not the controlling terminal"))
    return ControllingTerminal(fd)
