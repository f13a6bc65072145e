"""What the operator commands print (issue 24 §3): a document with hostile code points is
escaped on stdout (still JSON, the same strings), and at a terminal every string longer
than the screen's line cap is shortened, the file keeping it whole."""

from __future__ import annotations

import json
import sys

import pytest

from factory.cli.operator_wiring import print_json
from factory.display import LINE_LIMIT

HOSTILE = {"title": "\u202eevil\u2066" + "x" * 10_000, "n": 1}


def test_piped_output_is_escaped_and_whole(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    print_json(HOSTILE)
    out = capfdbinary.readouterr().out
    assert "\u202e".encode() not in out and b"\\u202e" in out
    assert json.loads(out) == HOSTILE  # the same strings, every character


def test_a_terminal_gets_short_lines_and_a_note(
    capfdbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    print_json(HOSTILE, kept_in="/x/op.json")
    captured = capfdbinary.readouterr()
    assert len(captured.out) < 3 * LINE_LIMIT  # one short line, not 10,000 characters
    assert "more)" in captured.out.decode() and json.loads(captured.out)["n"] == 1
    assert b"1 long value(s) shortened on this screen (/x/op.json holds them whole)" in (
        captured.err
    )
    # twin: a document with short values is shown whole, and nothing is said
    print_json({"title": "short"}, kept_in="/x/op.json")
    twin = capfdbinary.readouterr()
    assert json.loads(twin.out) == {"title": "short"} and twin.err == b""
