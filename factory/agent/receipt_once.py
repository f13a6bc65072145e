"""One read and one verification of a receipt per command, passed on (issue 25).

A command that needs a receipt in several places (``factory publish``: the source, the
gate's ``agent-receipt`` and ``candidate-risk`` evidence sources, the operator's intent)
reads and verifies it once, into a :class:`VerifiedReceipt`, and hands that value on.
A *reader* is how a component obtains one: :func:`read_and_verify` reads afresh (the
default of every component used on its own); :func:`pinned` answers the value a command
already holds for that same file. A re-check against a change between two moments of one
command (the operator's re-observation after the signature, a time-of-check/time-of-use
guard) deliberately reads afresh: see design/pipeline.md, "One read of the receipt".
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.agent.verification import ReceiptVerification
from factory.agent.verify import LoadedReceipt, read_receipt, verify_loaded


@dataclass(frozen=True, slots=True)
class VerifiedReceipt:
    """A receipt read once and the verification of exactly those bytes."""

    loaded: LoadedReceipt
    report: ReceiptVerification

    def report_json(self) -> dict[str, Any]:
        return self.report.to_json_value()


Reader = Callable[[Path], VerifiedReceipt]


def read_and_verify(path: Path) -> VerifiedReceipt:
    """Read the receipt at ``path`` and verify what was read (the refusals of
    :func:`factory.agent.verify.read_receipt`)."""
    loaded = read_receipt(path)
    return VerifiedReceipt(loaded, verify_loaded(loaded))


def pinned(held: VerifiedReceipt) -> Reader:
    """A reader answering ``held`` for its own file and reading any other file afresh."""
    own = os.path.realpath(held.loaded.path)

    def read(path: Path) -> VerifiedReceipt:
        return held if os.path.realpath(path) == own else read_and_verify(path)

    return read
