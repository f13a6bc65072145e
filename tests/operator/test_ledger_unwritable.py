"""A grant ledger that cannot take an entry is refused before the first prompt.

The ledger is opened at admission (right after ``--out`` is reserved) and proved writable
there by creating and removing a file the way an entry is created: an unwritable ledger is
``ledger-unwritable`` at stage ``admission`` (exit 2) with nothing shown, typed or spent.
Read-only is a real read-only tmpfs mount (the suite runs as root, for whom permission
bits are no obstacle); the twin, the same flow on a writable ledger, reaches both prompts
and spends its grant.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from factory.operator import keys
from factory.operator.ledger import LedgerRefused, open_ledger
from factory.operator.publish_flow import PublishFlow
from factory.operator.session import Authority, Result, operate
from tests.operator.helpers import REPO, ScriptedTerminal, World, receipt_json
from tests.support.mounts import tmpfs


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A folder on a read-only tmpfs (skipped where mounting is not allowed)."""
    with tmpfs(tmp_path / "ro-ledger", "ro,size=64k,mode=0700") as mnt:
        yield mnt


def _publish(world: World, ledger: Path, terminal: ScriptedTerminal, out: Path) -> Result:
    """Like the CLI's wiring: the ledger is opened inside ``prepare`` (stage admission)."""
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)

    def prepare() -> tuple[ScriptedTerminal, Authority]:
        public = keys.load_public(world.public)
        return terminal, Authority(keys.read_private(world.private), public,
                                   open_ledger(ledger), 120)  # fmt: skip

    return operate(out, flow, prepare)


def test_an_unwritable_ledger_is_refused_before_any_prompt(
    file_world: World, read_only: Path
) -> None:
    before = file_world.state()
    terminal = ScriptedTerminal()
    out = file_world.out("ro.json")
    result = _publish(file_world, read_only, terminal, out)
    assert result.exit_code == 2, result.diagnostic
    assert result.diagnostic is not None and "ledger-unwritable" in result.diagnostic
    receipt = receipt_json(out)
    assert receipt["status"] == "refused" and receipt["grant"] is None
    assert receipt["refusal"] == {"stage": "admission", "code": "ledger-unwritable"}
    assert terminal.screen == []  # no screen, no prompt: the operator typed nothing
    assert list(read_only.iterdir()) == [] and file_world.state() == before

    # twin: the same flow on a writable ledger reaches both prompts and spends the grant
    terminal = ScriptedTerminal()
    result = _publish(file_world, file_world.ledger, terminal, file_world.out("rw.json"))
    assert result.exit_code == 0, result.diagnostic
    assert any("passphrase" in line.lower() for line in terminal.screen)
    assert [p.suffix for p in file_world.ledger.iterdir()] == [".json"]  # no probe left


def test_open_ledger_probes_without_leaving_a_trace(tmp_path: Path, read_only: Path) -> None:
    with pytest.raises(LedgerRefused, match="Read-only file system") as refused:
        open_ledger(read_only)
    assert refused.value.code == "ledger-unwritable"
    folder = open_ledger(tmp_path / "ledger")  # twin: created, probed, left empty
    assert folder.is_dir() and list(folder.iterdir()) == []
