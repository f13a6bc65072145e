"""The one JSON emitter: hostile code points leave escaped, the parsed value is unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from factory.documents.canonical import canonical_bytes
from factory.documents.emit import inert_bytes, json_line

HOSTILE = [
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\x85",
    "\x9b",
    "\x7f",
    "\U000e0001",
    "\ud800",
]
ORDINARY = ["é", "日本", "naïve", "😀", "a\\b", '"q"']


def _raw_chars(data: bytes) -> set[str]:
    return set(data.decode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("char", HOSTILE)
@pytest.mark.parametrize("form", ["line", "indented", "canonical"])
def test_hostile_code_point_is_escaped_and_round_trips(char: str, form: str) -> None:
    value = {"title": f"evil{char}txt", "list": [char * 3]}
    if form == "canonical" and char != "\ud800":  # RFC 8785 has no lone surrogates
        data = inert_bytes(canonical_bytes(value))
    else:
        data = json_line(value, indent=2 if form == "indented" else None)
    assert char not in _raw_chars(data)
    assert json.loads(data.decode("utf-8")) == value


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_stays_readable(text: str) -> None:
    data = json_line({"t": text})
    assert text in json.loads(data)["t"]
    assert json.dumps(text, ensure_ascii=False) in data.decode("utf-8")


def _printers() -> dict[str, Callable[[Any], None]]:
    from factory.cli import gate_io, operator_wiring, review_cmd

    return {
        "operator": operator_wiring.print_json,
        "gate": gate_io.print_json,
        "review": review_cmd._emit,
    }


@pytest.mark.parametrize("command", ["operator", "gate", "review"])
@pytest.mark.parametrize("text", ["\u202eevil\u2066\u200b\u2028\x85\x7f" + "t" * 10_000, "é 日本"])
def test_each_command_printer_is_inert(
    command: str, text: str, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _printers()[command]({"title": text})
    out = capsysbinary.readouterr().out
    assert json.loads(out) == {"title": text}
    shown = out.decode("utf-8")
    assert not any(c in shown for c in "\u202e\u2066\u200b\u2028\x85\x7f")
    assert ("é 日本" in shown) == (text == "é 日本")  # the twin stays readable
