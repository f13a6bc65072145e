"""``factory receipt show R --html OUT.html`` in a real browser (issue 9 §3).

The page is parsed by headless Chromium: hostile file names, tasks and reviewer text must
come out as inert text in the DOM (no element of theirs, no bidi reordering), the page
must load nothing, and the demo's receipt must render with its verification first.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from factory.agent.receipt import Candidates, ChangedPath
from factory.agent.receipt_facts import PatchText, ReviewNote
from factory.agent.receipt_html import render_html, split_patch
from tests.agent.receipt_builders import HEX, candidate_record, facts, make_receipt, receipt_json
from tests.support.browser import dump_dom, pixel, screenshot
from tests.support.cli import run_factory

INJECT = "<img src=x onerror=alert(1)><script>document.title='owned'</script>"
HOSTILE_TASK = f"{INJECT} rlo-evil\u202etxt.exe app\u200b.py \x1b[2J"
HOSTILE_PATH = "</td><b>bold</b>\u202egpj.exe"
HOSTILE_REVIEW = "</pre><iframe src=//evil></iframe>\nLGTM \u2066hidden\u2069"
HOSTILE_PATCH = (
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+<script>x()</script>\n"
)


def hostile_page(tmp_path: Path) -> Path:
    files = [ChangedPath(path=HOSTILE_PATH, state="added", mode="100644", bytes=1, sha256=HEX)]
    receipt = make_receipt(task=HOSTILE_TASK).model_copy(
        update={"candidate": Candidates(initial=candidate_record(files, "f"))}
    )
    view = facts(
        receipt_json(receipt.closed()),
        reviews=[ReviewNote("final_review", "APPROVE", HOSTILE_REVIEW)],
        patches=[PatchText("initial", HOSTILE_PATCH)],
    )
    page = tmp_path / "hostile.html"
    page.write_text(render_html(view, tmp_path / "r.json"), encoding="utf-8")
    return page


def test_hostile_strings_are_inert_text_in_the_dom(tmp_path: Path) -> None:
    page = hostile_page(tmp_path)
    dom = dump_dom(page, tmp_path / "profile")
    # No element of theirs exists in the parsed document ...
    for tag in ("<img", "<script", "<iframe", "<b>"):
        assert tag not in dom, tag
    assert "<title>factory receipt: completed (REHEARSAL)</title>" in dom
    # ... their text is shown literally, and bidi/invisible characters as visible escapes.
    assert "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in dom
    assert "rlo-evil\\u202etxt.exe" in dom and "app\\u200b.py" in dom and "\\x1b[2J" in dom
    assert "&lt;/td&gt;&lt;b&gt;bold&lt;/b&gt;\\u202egpj.exe" in dom
    assert "&lt;/pre&gt;&lt;iframe src=//evil&gt;&lt;/iframe&gt;" in dom
    assert "LGTM \\u2066hidden\\u2069" in dom
    assert "+&lt;script&gt;x()&lt;/script&gt;" in dom
    for raw in ("\u202e", "\u200b", "\u2066", "\x1b"):
        assert raw not in dom


def test_the_page_loads_nothing_and_needs_no_script(tmp_path: Path) -> None:
    html = hostile_page(tmp_path).read_text(encoding="utf-8")
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert not re.search(r"<[^>]*\b(src|href|action|srcset)\s*=", html)
    assert "url(" not in html and "@import" not in html
    assert "default-src 'none'" in html  # and the browser is told to fetch nothing


def test_a_patch_splits_per_file_with_counts() -> None:
    patch = HOSTILE_PATCH + "diff --git a/y b/y\nnew file mode 100644\n+a\n+b\n"
    diffs = split_patch(patch)
    assert [(d.name, d.added, d.deleted) for d in diffs] == [
        ("a/x.py b/x.py", 1, 1),
        ("a/y b/y", 2, 0),
    ]
    assert [ln.kind for ln in diffs[0].lines] == ["meta", "meta", "meta", "hunk", "del", "add"]


@pytest.mark.realcli
def test_the_demo_receipt_renders_in_chromium(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    proc = run_factory(["demo", "--dir", str(demo), "--json"], timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    page = tmp_path / "receipt.html"
    show = run_factory(["receipt", "show", str(demo / "receipt.json"), "--html", str(page)])
    assert show.returncode == 0, show.stderr.decode()
    dom = dump_dom(page, tmp_path / "profile")
    text = re.sub(r"<[^>]+>", " ", dom)
    flat = " ".join(text.split())
    assert flat.index("VERIFIED: revision, canonical bytes and 15 evidence file(s)") < flat.index(
        "factory agent receipt: COMPLETED"
    )
    assert "REHEARSAL: this run used the scripted loopback model" in flat
    for phase in ("worker", "initial_review", "repair", "final_review"):
        assert phase in flat
    assert "model output, untrusted" in flat
    assert "no test covers even-length input" in flat  # the reviewer's reason
    assert "+ return (ordered[middle - 1] + ordered[middle]) / 2" in flat  # the diff
    assert 'class="l add"' in dom and "test_stats.py" in flat
    assert "this is not OS containment" in flat
    receipt = json.loads((demo / "receipt.json").read_bytes())
    assert receipt["revision"] in flat
    width, height = screenshot(
        page, tmp_path / "shot.png", tmp_path / "profile", width=1200, height=2400
    )
    assert (width, height) == (1200, 2400)
    assert (tmp_path / "shot.png").stat().st_size > 50_000  # a rendered page, not a blank one
    # Refused before any effect: the page exists now.
    again = run_factory(["receipt", "show", str(demo / "receipt.json"), "--html", str(page)])
    assert again.returncode == 2 and again.stdout == b""
    assert b"factory: output-exists:" in again.stderr


_GREEN, _AMBER, _RED = (0x1A, 0x7F, 0x37), (0x9A, 0x67, 0x00), (0xCF, 0x22, 0x2E)


@pytest.mark.parametrize(
    ("changes", "failed", "words", "colour"),
    [
        ({}, None, "Run APPROVED — receipt intact", _GREEN),
        (
            {"status": "rejected", "verdict": "REQUEST_CHANGES", "exit_code": 3},
            None,
            "Run REJECTED — receipt intact",
            _AMBER,
        ),
        # The negative control: an approved run whose receipt does not verify is red, and
        # says nothing about the outcome.
        ({}, ["revision does not match the body"], "Receipt does NOT verify", _RED),
    ],
)
def test_the_headline_names_the_outcome_in_its_colour(
    tmp_path: Path,
    changes: dict[str, object],
    failed: list[str] | None,
    words: str,
    colour: tuple[int, int, int],
) -> None:
    view = facts(receipt_json(make_receipt(**changes)), failed=failed)
    view = dataclasses.replace(view, checked_at="2026-12-04T03:00:00Z")
    page = tmp_path / "r.html"
    page.write_text(render_html(view, tmp_path / "r json"), encoding="utf-8")
    dom = dump_dom(page, tmp_path / "profile")
    body = dom.split("<main>", 1)[1]
    flat = " ".join(re.sub(r"<[^>]+>", " ", body).split())
    assert flat.startswith(words), flat[:200]
    assert "snapshot of a check made at 2026-12-04T03:00:00Z" in flat
    assert f"factory receipt verify '{tmp_path / 'r json'}'" in flat
    assert ("integrity: VERIFIED:" in flat) is (failed is None)
    shot = tmp_path / "shot.png"
    screenshot(page, shot, tmp_path / "profile", width=800, height=200)
    assert pixel(shot, 30, 30) == colour  # inside the headline box, left of its text
