"""A factory command on a real pseudo-terminal (pexpect), and a person authorizing at it."""

from __future__ import annotations

import io
import re
import sys

import pexpect

from tests.operator.helpers import PASSPHRASE

REVISION = re.compile(rb"intent revision: (sha256:[0-9a-f]{64})")
REV_PROMPT = "Type the full intent revision to authorize it: "
PASS_PROMPT = "Passphrase (not shown): "


class Screen:
    """A factory command on a pseudo-terminal; everything it shows is kept."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.log = io.BytesIO()
        self.child = pexpect.spawn(
            sys.executable, ["-m", "factory", *args], env=env, timeout=60, dimensions=(50, 250)
        )
        self.child.logfile_read = self.log

    @property
    def text(self) -> bytes:
        return self.log.getvalue()

    def expect(self, prompt: str) -> None:
        self.child.expect_exact(prompt.encode())

    def revision(self) -> str:
        found: list[bytes] = REVISION.findall(self.text)
        assert found, self.text
        return found[-1].decode()

    def finish(self) -> int:
        self.child.expect(pexpect.EOF)
        self.child.close()
        status: int = self.child.exitstatus
        return status

    def hang_up(self) -> int:
        """Close the terminal's master side (the kernel hangs it up and sends SIGHUP) and
        wait for the command's exit code."""
        self.child.ptyproc.fileobj.close()
        status: int = self.child.wait()
        return status


def authorize(screen: Screen, passphrase: bytes = PASSPHRASE) -> int:
    screen.expect(REV_PROMPT)
    screen.child.sendline(screen.revision())
    screen.expect(PASS_PROMPT)
    screen.child.sendline(passphrase)
    return screen.finish()
