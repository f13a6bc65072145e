"""Result and verdict edge cases found in the issue-4 review (SPEC P-4); pure, no processes."""

from __future__ import annotations

import json

import pytest

from factory.errors import ProviderFailure
from providers import claude, codex


def _claude(**fields: object) -> tuple[str, str] | None:
    doc: dict[str, object] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done",
        "terminal_reason": "completed",
    }
    doc.update(fields)
    return claude.classify(claude.parse_stream(json.dumps(doc).encode() + b"\n"), 0, b"")


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"is_error": None}, "provider-protocol"),
        ({"is_error": "false"}, "provider-protocol"),
        ({"is_error": 0}, "provider-protocol"),
        ({"terminal_reason": "api_error"}, "provider-failed"),
        ({"terminal_reason": "max_turns"}, "provider-failed"),
    ],
)
def test_claude_success_needs_a_false_is_error_and_a_completed_run(
    fields: dict[str, object], code: str
) -> None:
    got = _claude(**fields)
    assert got is not None and got[0].name == code


def test_claude_missing_is_error_is_not_success() -> None:
    doc = {"type": "result", "subtype": "success", "result": "done"}
    got = claude.classify(claude.parse_stream(json.dumps(doc).encode()), 0, b"")
    assert got is not None and got[0].name == "provider-protocol"


def test_claude_completed_twins_are_success() -> None:
    assert _claude() is None
    doc = {"type": "result", "subtype": "success", "is_error": False, "result": "done"}
    assert claude.classify(claude.parse_stream(json.dumps(doc).encode()), 0, b"") is None


def test_codex_nonzero_exit_after_turn_completed_is_protocol() -> None:
    events = codex.parse_events(b'{"type":"turn.completed"}\n')
    got = codex.classify(events, 1, b"boom\n")
    assert got is not None and got[0].name == "provider-protocol" and "boom" in got[1]
    assert codex.classify(events, 0, b"") is None  # twin


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b'{"verdict":"APPROVE","verdict":"REQUEST_CHANGES","summary":"x"}', "duplicate key"),
        (b'{"verdict":"APPROVE","summary":"a","summary":"b"}', "duplicate key"),
        (b'{"verdict":"APPROVE","summary":"\\ud800"}', "not valid Unicode"),
        (b"[1]", "not a JSON object"),
    ],
)
def test_ambiguous_or_non_text_verdicts_are_refused(raw: bytes, needle: str) -> None:
    with pytest.raises(ProviderFailure) as info:
        codex.parse_verdict(raw)
    assert info.value.code == "provider-protocol" and needle in info.value.message
    assert "_VerdictDoc" not in info.value.message


def test_verdict_with_an_astral_character_twin_is_accepted() -> None:
    got = codex.parse_verdict(b'{"verdict":"APPROVE","summary":"\\ud83d\\ude00 ok"}')
    assert got.summary == "\U0001f600 ok"


def test_codex_truncated_last_line() -> None:
    done = b'{"type":"turn.started"}\n{"type":"turn.completed","usage":{}}\n'
    cut = done[:-8]  # killed mid-line: the terminal event itself is lost
    got = codex.classify(codex.parse_events(cut), 0, b"")
    assert got is not None and got[0].name == "provider-protocol"
    trailing = codex.parse_events(done + b'{"type":"item.comp')
    assert trailing.garbage_lines == 1 and codex.classify(trailing, 0, b"") is None
