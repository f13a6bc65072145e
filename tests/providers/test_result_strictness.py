"""Result and verdict edge cases found in the issue-4 review (SPEC P-4); pure, no processes."""

from __future__ import annotations

import json

import pytest

from factory.errors import Code, ProviderFailure
from providers import claude, codex_output


def _claude(**fields: object) -> tuple[Code[ProviderFailure], str] | None:
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
    events = codex_output.parse_events(b'{"type":"turn.completed"}\n')
    got = codex_output.classify(events, 1, b"boom\n")
    assert got is not None and got[0].name == "provider-protocol" and "boom" in got[1]
    assert codex_output.classify(events, 0, b"") is None  # twin


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
        codex_output.parse_verdict(raw)
    assert info.value.code == "provider-protocol" and needle in info.value.message
    assert "_VerdictDoc" not in info.value.message


def test_verdict_with_an_astral_character_twin_is_accepted() -> None:
    got = codex_output.parse_verdict(b'{"verdict":"APPROVE","summary":"\\ud83d\\ude00 ok"}')
    assert got.summary == "\U0001f600 ok"


def test_codex_truncated_last_line() -> None:
    done = b'{"type":"turn.started"}\n{"type":"turn.completed","usage":{}}\n'
    cut = done[:-8]  # killed mid-line: the terminal event itself is lost
    got = codex_output.classify(codex_output.parse_events(cut), 0, b"")
    assert got is not None and got[0].name == "provider-protocol"
    trailing = codex_output.parse_events(done + b'{"type":"item.comp')
    assert trailing.garbage_lines == 1 and codex_output.classify(trailing, 0, b"") is None


DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_deeply_nested_verdict_is_protocol_not_a_crash() -> None:
    """Issue 8 §7: nesting past the parser's limit is a verdict-schema violation."""
    with pytest.raises(ProviderFailure) as info:
        codex_output.parse_verdict(b'{"verdict":"APPROVE","summary":' + DEEP + b"}")
    assert info.value.code == "provider-protocol" and "nested too deeply" in info.value.message


def test_a_deeply_nested_event_line_is_one_garbage_line_for_both_profiles() -> None:
    deep = b'{"type":"x","a":' + DEEP + b"}\n"
    done = b'{"type":"turn.started"}\n{"type":"turn.completed","usage":{}}\n'
    events = codex_output.parse_events(deep + done)
    assert events.garbage_lines == 1 and codex_output.classify(events, 0, b"") is None
    init = b'{"type":"system","subtype":"init"}\n'
    result = (
        b'{"type":"result","subtype":"success","is_error":false,"result":"ok",'
        b'"terminal_reason":"completed"}\n'
    )
    stream = claude.parse_stream(init + deep + result)
    assert stream.garbage_lines == 1 and claude.classify(stream, 0, b"") is None
    # twin: without the deep line nothing is garbage
    assert claude.parse_stream(init + result).garbage_lines == 0
