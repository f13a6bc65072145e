"""A real terminal for tests: a private tmux server, one window of a fixed size.

``with Terminal(cols=80) as term:`` starts ``tmux -S <socket> new-session`` running
``bash --norc --noprofile`` in ``cwd`` with the given environment; :meth:`Terminal.type`
sends a command line, :meth:`Terminal.wait_for` polls ``capture-pane`` until a text shows
up (a readiness signal, not a sleep; the deadline is generous because the machine is
shared), :meth:`Terminal.screen` is what a person sees now. The server is killed on exit.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import pytest

TMUX = shutil.which("tmux")


def need_tmux() -> str:
    if TMUX is None:
        pytest.fail("tmux is not installed; ./scripts/setup installs it (apt-get install tmux)")
    return TMUX


class Terminal:
    """One tmux window, ``cols`` × ``rows``, running bash in ``cwd``."""

    def __init__(
        self,
        tmp: Path,
        *,
        cols: int = 80,
        rows: int = 40,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.tmux = need_tmux()
        self.socket = tmp / f"tmux-{uuid.uuid4().hex[:8]}"
        self.cols, self.rows = cols, rows
        self.cwd = cwd or tmp
        self.env = dict(env or {})

    def _run(self, *args: str) -> str:
        proc = subprocess.run(
            [self.tmux, "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
            env=self._server_env(),
        )
        return proc.stdout

    def _server_env(self) -> dict[str, str]:
        # The server (and so the shell) starts from this environment only, never from the
        # test process's: a PATH with .venv/bin in it would change what the shell finds.
        return {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", **self.env}

    def __enter__(self) -> Terminal:
        env_args = [f"-e{k}={v}" for k, v in self.env.items()]
        self._run(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            str(self.cols),
            "-y",
            str(self.rows),
            "-c",
            str(self.cwd),
            *env_args,
            "bash --norc --noprofile",
        )
        self._run("set-option", "-g", "history-limit", "20000")
        self.type("PS1='$ '; clear")
        return self

    def __exit__(
        self,
        et: type[BaseException] | None,
        ev: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        subprocess.run(
            [self.tmux, "-S", str(self.socket), "kill-server"],
            capture_output=True,
            check=False,
            env=self._server_env(),
        )

    def type(self, line: str) -> None:
        """Type ``line`` and press Enter (sent literally: no key names)."""
        self._run("send-keys", "-l", line)
        self._run("send-keys", "Enter")

    def key(self, name: str) -> None:
        """Press a key by tmux name (``C-c``, ``C-d``)."""
        self._run("send-keys", name)

    def screen(self) -> str:
        """What the window shows now, one line per row (trailing blanks dropped)."""
        return self._run("capture-pane", "-p")

    def history(self, *, joined: bool = True) -> str:
        """The whole scrollback and the screen; ``joined`` undoes the terminal's soft wraps."""
        return self._run("capture-pane", "-p", "-S", "-", *(["-J"] if joined else []))

    def title(self) -> str:
        return self._run("display-message", "-p", "#{pane_title}").strip()

    def wait_for(self, text: str, *, timeout: float = 120, whole: bool = False) -> str:
        """Poll until ``text`` is on the screen (or in the scrollback with ``whole``)."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.history() if whole else self.screen()
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear within {timeout}s:\n{shown}")
            time.sleep(0.1)
