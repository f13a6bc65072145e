"""``receipt show`` says what the process supervision recorded (issue 8 §4/§5, issue 9 §2):
the leftover processes swept per phase, a stream kept only up to its cap, and whether the
factory that wrote a ``running`` receipt is still there — on the terminal and on the page
(the page read back by headless Chromium). Each mark has its twin that carries none."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from factory.agent.receipt import AgentReceipt, EvidenceRef, FactoryProcess
from factory.agent.receipt_html import render_html
from tests.agent.receipt_builders import HEX, facts, make_receipt, show
from tests.agent.receipt_builders import receipt_json as _json
from tests.support.browser import dump_dom

SWEPT = "swept: 2 leftover process(es) of the CLI were frozen and killed"
CUT = "TRUNCATED: 3,000,000 B (2.9 MiB) written"
GONE = "ABANDONED: the factory process that wrote it (pid 4242) is gone"
LIVE = "in progress: the factory process (pid 4242) is still running"


def supervised(*, swept: int | None, truncated: bool) -> AgentReceipt:
    """The default receipt with its worker phase swept ``swept`` processes and carrying a
    stderr stream that was (or was not) cut at its 1 MiB cap."""
    base = make_receipt()
    stderr = EvidenceRef(
        role="worker-stderr",
        path=f"r.json.evidence/worker-stderr-{HEX}",
        bytes=1 << 20,
        sha256=HEX,
        media_type="text/plain",
        truncated=truncated,
        stream_bytes=3_000_000 if truncated else None,
    )
    worker = base.phases[0].model_copy(update={"swept_processes": swept, "evidence": [stderr]})
    return base.model_copy(update={"phases": [worker, *base.phases[1:]]}).closed()


def running(state: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``running`` reservation and the verify report's liveness for it."""
    receipt = make_receipt().model_copy(
        update={
            "status": "running",
            "exit_code": None,
            "verdict": None,
            "revision": None,
            "factory_process": FactoryProcess(pid=4242, start_ticks=1, boot_id="boot"),
        }
    )
    return _json(receipt), {"liveness": state}


def page(view: Any, tmp_path: Path) -> str:
    return render_html(view, tmp_path / "r.json")


def dom_text(html: str, tmp_path: Path) -> str:
    file = tmp_path / "page.html"
    file.write_text(html, encoding="utf-8")
    dom = dump_dom(file, tmp_path / "profile")
    return " ".join(re.sub(r"<[^>]+>", " ", dom).split())


def test_terminal_names_the_sweep_and_the_truncation() -> None:
    text = " ".join(show(_json(supervised(swept=2, truncated=True)), width=250).split())
    assert SWEPT in text
    assert CUT in text


def test_terminal_breaks_the_line_before_the_sweep_note_without_an_escape() -> None:
    shown = show(_json(supervised(swept=2, truncated=False)), width=250)
    assert "\\x0a" not in shown
    assert any(line.strip().startswith("swept: 2") for line in shown.splitlines())


def test_twin_terminal_without_sweep_or_truncation_says_neither() -> None:
    for swept in (0, None):
        text = " ".join(show(_json(supervised(swept=swept, truncated=False)), width=250).split())
        assert "swept:" not in text and "TRUNCATED" not in text


def test_page_names_the_sweep_and_the_truncation(tmp_path: Path) -> None:
    html = page(facts(_json(supervised(swept=2, truncated=True))), tmp_path)
    flat = dom_text(html, tmp_path)
    assert SWEPT in flat
    assert CUT in flat
    # the sweep sits in the worker's timeline row, the truncation in its evidence row
    assert flat.index("worker") < flat.index(SWEPT) < flat.index("initial_review")
    assert flat.index("worker-stderr-") < flat.index(CUT)


def test_twin_page_without_sweep_or_truncation_says_neither(tmp_path: Path) -> None:
    for swept in (0, None):
        html = page(facts(_json(supervised(swept=swept, truncated=False))), tmp_path)
        assert "swept:" not in html and "TRUNCATED" not in html


def test_an_abandoned_running_receipt_says_so_on_both(tmp_path: Path) -> None:
    value, report = running("abandoned")
    view = facts(value, failed=["running"])
    view = replace(view, report={**view.report, **report})
    assert GONE in " ".join(show(view, width=250).split())
    html = page(view, tmp_path)
    assert 'id="liveness"' in html and "liveness-abandoned" in html
    assert GONE in dom_text(html, tmp_path)


def test_twin_a_live_running_receipt_is_in_progress_and_a_terminal_one_has_no_liveness(
    tmp_path: Path,
) -> None:
    value, report = running("running")
    view = facts(value, failed=["running"])
    view = replace(view, report={**view.report, **report})
    text = " ".join(show(view, width=250).split())
    assert LIVE in text and "ABANDONED" not in text
    html = page(view, tmp_path)
    assert LIVE in html and "ABANDONED" not in html
    done = page(facts(_json(supervised(swept=None, truncated=False))), tmp_path)
    assert 'id="liveness"' not in done and "ABANDONED" not in done
