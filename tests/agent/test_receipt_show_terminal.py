"""Hostile receipt strings in a real terminal (tmux, 80 and 120 columns): shown as visible
escapes, never obeyed (issue 9 §2: one display sanitiser for receipt show and stderr)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from factory.agent.receipt import Candidates, ChangedPath, receipt_bytes
from tests.agent.test_receipt_show import HEX, _candidate, _ev, linked, make_receipt
from tests.support.tmux import Terminal

TASK = "\x1b]0;owned\x07\x1b[2J\x1b[Hsafe\rEVIL rlo-evil\u202etxt.exe \u009b31mred"
PATH = "app\u200b.py"
ROLE = "worker-stdout\x1b]0;owned-too\x07\u202e"


def hostile_receipt(folder: Path) -> Path:
    files = [ChangedPath(path=PATH, state="added", mode="100644", bytes=1, sha256=HEX)]
    receipt = make_receipt(task=TASK)
    first = receipt.phases[0]
    worker = first.model_copy(update={"evidence": [_ev(ROLE, 1)]})
    receipt = linked(
        receipt.model_copy(
            update={
                "candidate": Candidates(
                    initial=_candidate(files, "f"), repaired=receipt.candidate.repaired
                ),
                "phases": [worker, *receipt.phases[1:]],
            }
        )
    ).closed()
    path = folder / "r.json"
    path.write_bytes(receipt_bytes(receipt))
    return path


@pytest.mark.parametrize("cols", [80, 120])
def test_hostile_strings_show_as_escapes_at_a_real_terminal(tmp_path: Path, cols: int) -> None:
    hostile_receipt(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "HOME": str(tmp_path)}
    with Terminal(tmp_path, cols=cols, rows=50, env=env) as term:
        before = term.title()
        term.type(f'{sys.executable} -m factory receipt show r.json; echo "show""-exit=$?"')
        term.wait_for("show-exit=4", timeout=120)
        shown = term.history()
        rows = term.history(joined=False)
        assert term.title() == before  # OSC 0 did not retitle the window
    flat = shown.replace("\n", "")
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x1b[Hsafe\\x0dEVIL" in flat  # the task, inert
    assert "rlo-evil\\u202etxt.exe" in flat and "\\x9b31mred" in flat
    assert "app\\u200b.py" in flat
    # stderr's one-line diagnostic names the forged role through the same sanitiser
    assert "factory: receipt-not-verified: evidence worker-stdout\\x1b]0;owned-too\\x07\\u202e" in (
        flat
    )
    for raw in ("\u202e", "\u200b", "\x1b", "\x07", "\u009b"):
        assert raw not in shown
    assert all(len(line) <= cols for line in rows.splitlines())
