"""Pure request inspection of the scripted model (no server, no CLIs)."""

from __future__ import annotations

import json

from factory.rehearsal import wire


def test_anthropic_session_from_header_then_metadata() -> None:
    body = {"metadata": {"user_id": json.dumps({"session_id": "from-meta"})}}
    assert wire.anthropic_session({"x-claude-code-session-id": "from-header"}, body) == (
        "from-header"
    )
    assert wire.anthropic_session({}, body) == "from-meta"
    assert wire.anthropic_session({}, {"metadata": {"user_id": "not json"}}) is None
    assert wire.anthropic_session({}, {}) is None


def test_codex_session_from_header_then_prompt_cache_key() -> None:
    assert wire.codex_session({"session-id": "h"}, {"prompt_cache_key": "k"}) == "h"
    assert wire.codex_session({}, {"prompt_cache_key": "k"}) == "k"
    assert wire.codex_session({}, {}) is None


def test_turns_are_derived_from_the_request_content() -> None:
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": []},
        {"role": "user", "content": []},
        {"role": "system", "content": "budget"},
        {"role": "assistant", "content": []},
    ]
    assert wire.anthropic_turn({"messages": messages}) == 2
    assert wire.anthropic_turn({}) == 0
    items = [
        {"type": "message"},
        {"type": "function_call"},
        {"type": "function_call_output"},
        {"type": "function_call"},
    ]
    assert wire.codex_turn({"input": items}) == 2
    assert wire.codex_turn({"input": "text"}) == 0


def test_tool_result_found_behind_a_trailing_system_message() -> None:
    body = {
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use"}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "is_error": True,
                        "content": [{"type": "text", "text": "denied"}],
                    }
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": "USD budget"}]},
        ]
    }
    assert wire.anthropic_last_tool_result(body) == "[is_error] denied"


def test_no_tool_result_before_the_last_assistant_turn_counts() -> None:
    body = {
        "messages": [
            {"role": "user", "content": [{"type": "tool_result", "content": "old"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": "next"},
        ]
    }
    assert wire.anthropic_last_tool_result(body) is None
    assert (
        wire.codex_last_tool_result(
            {"input": [{"type": "function_call_output", "output": "x" * 5000}]}
        )
        == "x" * 2048
    )
