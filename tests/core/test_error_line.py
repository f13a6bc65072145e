"""A typed error's stderr line never breaks off an instruction (issue 28): the fact — which
may quote a path or someone else's words — is made inert and capped; the next command and
the code's next step are made inert but never cut."""

from __future__ import annotations

from factory.display import LINE_LIMIT, error_line
from factory.fsio import OUTPUT_UNWRITABLE
from factory.review.errors import LINEAGE_UNKNOWN, ReviewRefused


def test_a_long_fact_is_capped_and_the_next_step_is_whole() -> None:
    step = "run 'factory doctor', then " + "x" * 500
    line = error_line("c", "\u202e" + "f" * 2000, step)
    assert line.startswith("factory: c: \\u202e") and "more)" in line
    assert line.endswith("; " + step) and "\u202e" not in line
    error = OUTPUT_UNWRITABLE("\u202e" + "f" * 2000)
    assert error.shown().endswith(OUTPUT_UNWRITABLE.next_step)
    # twin: a short fact is shown whole, exactly as diagnostics() says it
    short = OUTPUT_UNWRITABLE("short fact")
    assert short.shown() == short.diagnostics()


def test_a_review_refusal_keeps_its_next_command_after_a_capped_fact() -> None:
    command = "factory review recover --lineage L --disposition scope_changed " + "y" * 300
    line = ReviewRefused("g" * 3000, code=LINEAGE_UNKNOWN, next=(command,)).shown()
    assert f"(next: {command}); {LINEAGE_UNKNOWN.next_step}" in line
    assert len(line) < 3000
    twin = ReviewRefused("a short fact", code=LINEAGE_UNKNOWN, next=(command,))
    assert twin.shown() == twin.diagnostics()


def test_the_next_step_is_still_made_inert() -> None:
    line = error_line("c", "fact", "do \u2066this\u2069", kept=" (next: \x1b[31mrm)")
    assert "\u2066" not in line and "\x1b" not in line and len("fact") < LINE_LIMIT
