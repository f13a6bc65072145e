"""The one display sanitiser: hostile strings come out visible and inert."""

from __future__ import annotations

import pytest

from factory.display import LINE_LIMIT, escape_char, inert, inert_join, inert_lines, is_inert

HOSTILE = [
    ("csi clear", "\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
    (
        "osc 8 link",
        "\x1b]8;;http://x\x07click\x1b]8;;\x07",
        "\\x1b]8;;http://x\\x07click\\x1b]8;;\\x07",
    ),
    ("dcs", "\x1bPq#0\x1b\\", "\\x1bPq#0\\x1b\\\\"),
    ("c1 csi", "a\x9b31mred", "a\\x9b31mred"),
    ("del", "a\x7fb", "a\\x7fb"),
    ("nul", "a\x00b", "a\\x00b"),
    ("cr overwrite", "safe\rEVIL", "safe\\x0dEVIL"),
    ("lf", "one\ntwo", "one\\x0atwo"),
    ("tab", "a\tb", "a\\x09b"),
    ("rlo", "rlo-evil\u202etxt.exe", "rlo-evil\\u202etxt.exe"),
    ("lre pdf", "\u202aa\u202c", "\\u202aa\\u202c"),
    ("isolates", "\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
    ("marks", "\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),
    ("zero width", "app\u200b.py", "app\\u200b.py"),
    ("zwj zwnj", "a\u200c\u200db", "a\\u200c\\u200db"),
    ("word joiner bom", "\u2060\ufeff", "\\u2060\\ufeff"),
    ("separators", "a\u2028b\u2029c", "a\\u2028b\\u2029c"),
    ("soft hyphen", "pay\u00admen", "pay\\xadmen"),
    ("tag char", "a\U000e0041", "a\\U000e0041"),
    ("lone surrogate", "name\udcff", "name\\udcff"),
    ("backslash", "a\\u202eb", "a\\\\u202eb"),
]


@pytest.mark.parametrize(("label", "raw", "shown"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_strings_are_escaped_visibly(label: str, raw: str, shown: str) -> None:
    assert inert(raw) == shown
    assert not is_inert(raw)
    assert is_inert(inert(raw).replace("\\", "/"))


@pytest.mark.parametrize(
    "plain", ["README.md", "src/app.py", "café ünïcode ✓", "日本語のファイル", "emoji 🎉"]
)
def test_negative_control_plain_text_is_unchanged(plain: str) -> None:
    assert inert(plain) == plain
    assert is_inert(plain)


def test_long_lines_are_capped_with_a_count() -> None:
    text = "x" * 10_000
    shown = inert(text)
    assert shown.startswith("x" * LINE_LIMIT)
    assert shown.endswith(f"… (+{10_000 - LINE_LIMIT} more)")
    assert inert(text, limit=None) == text
    assert inert("x" * LINE_LIMIT) == "x" * LINE_LIMIT


def test_blocks_split_on_lf_only_and_keep_tabs() -> None:
    assert inert_lines("a\tb\nc\rd\u2028e") == ["a\tb", "c\\x0dd\\u2028e"]
    assert inert_lines("1\n2\n3\n4", max_lines=2) == ["1", "2", "… (2 more lines)"]
    assert inert_lines("1\n2\n3", max_lines=2) == ["1", "2", "… (1 more line)"]


def test_join_escapes_parts_not_the_separator() -> None:
    assert inert_join(["a\nb", "c"], sep="\n") == "a\\x0ab\nc"


def test_escape_forms() -> None:
    assert escape_char("\x1b") == "\\x1b"
    assert escape_char("\u202e") == "\\u202e"
    assert escape_char("\U000e0001") == "\\U000e0001"


def test_safe_line_keeps_escapes_made_upstream_and_escapes_raw_controls() -> None:
    from factory.display import safe_line

    assert safe_line("factory: x: fol\\nder: bad") == "factory: x: fol\\nder: bad"
    assert safe_line("a\x1b[2Jb\\n") == "a\\x1b[2Jb\\\\n"  # raw control: the whole line inert
    assert safe_line("x" * 500).endswith("… (+100 more)")
