"""``factory publish`` reads and verifies the agent receipt once and passes the value on
(issue 25). Counted with an audit hook (every ``open`` of the receipt file, whoever opens
it) and a profiler on the verifier; the one further read and verification is the
operator's re-check before the grant is spent (a time-of-check/time-of-use guard, see
design/pipeline.md "One read of the receipt"), and its twin proves it is a real re-read:
a receipt changed after it was shown is caught there."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from factory.agent import verify as verify_mod
from tests.operator.helpers import ScriptedTerminal, World
from tests.pipeline.flow import publish
from tests.pipeline.helpers import DOCS, make_world
from tests.support.forge import LoopbackForge
from tests.support.git_remote import HttpRemote

WATCH: dict[str, Any] = {"path": None}
OPENS: Counter[str] = Counter()


def _hook(event: str, args: tuple[Any, ...]) -> None:
    path = WATCH["path"]
    if path is None or event != "open" or not args or not isinstance(args[0], str | bytes):
        return
    if os.path.realpath(os.fsdecode(args[0])) == path:
        OPENS["open"] += 1


sys.addaudithook(_hook)  # audit hooks cannot be removed: it is inert while WATCH is empty


@contextmanager
def counting(receipt: Path) -> Iterator[Counter[str]]:
    """Opens of ``receipt`` and calls of the verifier while the block runs."""
    seen: Counter[str] = Counter()
    verify_code = verify_mod.verify_loaded.__code__

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is verify_code:
            seen["verify"] += 1

    OPENS.clear()
    WATCH["path"] = os.path.realpath(receipt)
    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        WATCH["path"] = None
        seen["open"] = OPENS["open"]


def test_publish_reads_and_verifies_the_receipt_once_then_rechecks_once(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world: World = make_world(tmp_path, forge, http_remote, DOCS)
    with counting(world.agent_receipt) as seen:
        result = publish(world)
    assert result.exit_code == 0, result.diagnostic
    # once for the whole command (source, gate evidence, intent) + the TOCTOU re-check
    assert (seen["open"], seen["verify"]) == (2, 2), seen


def test_the_recheck_reads_afresh_a_receipt_changed_after_it_was_shown(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    """The twin: the re-check is a real read — the edit between showing and spending the
    grant is caught (the publication stops, nothing is pushed)."""
    world: World = make_world(tmp_path, forge, http_remote, DOCS)
    receipt = world.agent_receipt

    def edit() -> None:  # a byte that changes the file, not the JSON value
        receipt.write_bytes(receipt.read_bytes().replace(b'"status"', b'"status" ', 1))

    with counting(receipt) as seen:
        result = publish(world, terminal=ScriptedTerminal(before_secret=edit))
    assert result.exit_code != 0, result.diagnostic
    assert "receipt-not-verified" in str(result.diagnostic), result.diagnostic
    assert seen["verify"] == 2  # the re-check ran and judged the new bytes
    assert world.forge.state.calls("POST", "/pulls") == []
