"""`factory receipt show` rendering (SPEC A-8): readable, honest about rehearsal, inert text."""

from __future__ import annotations

from typing import Any

import pytest

from factory.agent.receipt import (
    Candidates,
    ChangedPath,
    ErrorRecord,
    Timings,
)
from factory.agent.receipt_facts import ReviewNote
from factory.agent.receipt_show import parse_receipt
from factory.agent.receipt_text import (
    MAX_ROWS,
    clean,
    evidence_file,
    format_bytes,
    format_ms,
    short_digest,
)
from factory.agent.verify import ReceiptInvalid
from factory.errors import ExitCode
from factory.provider_api import SUBSCRIPTION_EXECUTION
from tests.agent.receipt_builders import (
    HEX,
    candidate_record,
    evidence_ref,
    facts,
    make_receipt,
    receipt_json,
    show,
)


def test_a_completed_rehearsal_receipt_reads_plainly() -> None:
    text = show(receipt_json(make_receipt()), width=250)
    flat = " ".join(text.split())
    assert "COMPLETED" in text
    assert "REHEARSAL" in text and "scripted loopback model, not a real model" in text
    for phase in ("worker", "initial_review", "repair", "final_review"):
        assert phase in text
    assert "REQUEST_CHANGES" in text and "APPROVE" in text
    assert "1m 01.5s" in text  # the initial review's duration
    assert "claude 2.1.332" in text and "codex 0.171.0" in text
    # candidate files with state and size; both candidates
    assert "initial candidate sha256:" in text and "repaired candidate sha256:" in text
    assert "tests/test_calc.py" in text and "2,048 B (2.0 KiB)" in text
    assert "deleted" in text and "old.txt" in text
    # evidence: path, size, short sha256
    assert f"worker-stdout-{HEX[:12]}..." in text
    assert HEX[:12] in text and "321 B" in text
    # residuals and the revision, which matches
    assert "this is not OS containment" in flat
    assert f"patch-{HEX[:12]}..." in text and f"status-{HEX[:12]}..." in text
    assert "policy: local-sensitive-content-addressed" in text
    # One headline joins outcome and integrity; integrity is the labelled second line.
    assert text.startswith("Run APPROVED — receipt intact\nintegrity: VERIFIED ")


def test_a_subscription_receipt_does_not_claim_rehearsal() -> None:
    text = show(receipt_json(make_receipt(route="subscription", execution=SUBSCRIPTION_EXECUTION)))
    assert "REHEARSAL" not in text
    assert "subscription" in text


def test_a_failed_receipt_shows_its_error_and_exit_code() -> None:
    receipt = make_receipt(
        status="failed",
        exit_code=4,
        verdict=None,
        error=ErrorRecord(code="repair-no-change", message="the repair changed nothing"),
        phases=make_receipt().phases[:3],
    )
    text = show(receipt_json(receipt))
    assert "FAILED" in text
    assert "repair-no-change: the repair changed nothing" in text
    assert "final_review" not in text


def test_a_running_reservation_renders_without_revision() -> None:
    receipt = make_receipt(
        status="running",
        exit_code=None,
        verdict=None,
        phases=[],
        candidate=Candidates(),
        base=None,
        timings=Timings(started_at="2026-11-30T10:00:00.000Z", ended_at=None, duration_ms=None),
    )
    value = receipt_json(receipt)
    value["revision"] = None
    text = show(value)
    assert "RUNNING" in text
    assert "a running reservation is not closed" in text
    assert "candidate: none recorded" in text


def test_an_edited_field_is_flagged_and_the_untouched_twin_is_not() -> None:
    value = receipt_json(make_receipt())
    assert "DOES NOT MATCH" not in show(value)
    value["verdict"] = "REQUEST_CHANGES"
    assert "DOES NOT MATCH" in show(value)


def test_receipt_text_cannot_drive_the_terminal_or_inject_markup() -> None:
    hostile = "[bold red]APPROVED[/bold red]\x1b[2J\x1b]0;owned\x07\rline2\u009b31m"
    receipt = make_receipt(task=hostile)
    files = [ChangedPath(path="a\x1b[31m.py", state="added", mode="100644", bytes=1, sha256=HEX)]
    receipt = receipt.model_copy(
        update={"candidate": Candidates(initial=candidate_record(files, "f"))}
    ).closed()
    text = show(receipt_json(receipt))
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text and "\u009b" not in text
    assert "[bold red]APPROVED[/bold red]" in text  # shown literally, not as markup
    assert "\\x1b[2J" in text and "a\\x1b[31m.py" in text


def test_long_lists_are_capped_with_a_count() -> None:
    files = [
        ChangedPath(path=f"f{i:04d}.txt", state="added", mode="100644", bytes=i, sha256=HEX)
        for i in range(MAX_ROWS + 7)
    ]
    receipt = make_receipt(candidate=Candidates(initial=candidate_record(files, "a")))
    text = show(receipt_json(receipt))
    assert f"f{MAX_ROWS - 1:04d}.txt" in text
    assert f"f{MAX_ROWS:04d}.txt" not in text
    assert "... and 7 more changed path(s)" in text


@pytest.mark.parametrize(
    "edit",
    [
        lambda v: v.update(schema="factory.agent-receipt/2"),
        lambda v: v.update(status="approved"),
        lambda v: v.update(surprise=1),
        lambda v: v.pop("phases"),
        lambda v: v.update(exit_code="0"),
    ],
)
def test_an_invalid_receipt_is_a_typed_error(edit: Any) -> None:
    value = receipt_json(make_receipt())
    show(value)  # negative control: the untouched receipt renders
    edit(value)
    with pytest.raises(ReceiptInvalid) as info:
        parse_receipt(value)
    assert info.value.code == "receipt-invalid"
    assert info.value.exit_code == ExitCode.FAILURE
    assert "\n" not in info.value.message


def test_narrow_terminal_still_renders_everything_needed() -> None:
    text = show(receipt_json(make_receipt()), width=60)
    assert "REHEARSAL" in text and "COMPLETED" in text and "APPROVE" in text
    # Everything fits, except the lines that must stay whole (issue 28): the revision is
    # one line the terminal wraps softly, never two pieces made by rich.
    receipt = make_receipt()
    assert f"revision {receipt.revision}" in text.splitlines()
    assert len(f"revision {receipt.revision}") == 80  # whole at 80 columns
    assert max(len(line) for line in text.splitlines() if "revision" not in line) <= 60


@pytest.mark.parametrize(
    ("fn", "arg", "out"),
    [
        (format_bytes, None, "-"),
        (format_bytes, 0, "0 B"),
        (format_bytes, 5 * 1024 * 1024, "5,242,880 B (5.0 MiB)"),
        (format_ms, 850, "850 ms"),
        (format_ms, 1500, "1.5s"),
        (format_ms, None, "-"),
        (short_digest, "sha256:" + HEX, "sha256:" + HEX[:12]),
        (short_digest, HEX, HEX[:12]),
        (short_digest, None, "-"),
        (clean, "a\tb\nc\u2028", "a\\x09b\\x0ac\\u2028"),
    ],
)
def test_formatters(fn: Any, arg: Any, out: str) -> None:
    assert fn(arg) == out


def test_evidence_file_shortens_only_the_content_addressed_name() -> None:
    assert evidence_file(evidence_ref("worker-stdout", 1)) == f"worker-stdout-{HEX[:12]}..."
    odd = evidence_ref("worker-stdout", 1).model_copy(update={"path": "/elsewhere/out.txt"})
    assert evidence_file(odd) == "/elsewhere/out.txt"


def test_a_failed_verification_is_named_first_and_last_and_nothing_looks_reassuring() -> None:
    value = receipt_json(make_receipt())
    failed = ["evidence worker-stdout: digest-mismatch", "revision does not match the body"]
    text = show(facts(value, failed=failed))
    lines = text.splitlines()
    assert lines[0] == "Receipt does NOT verify"
    assert lines[1].startswith("integrity: VERIFICATION FAILED: do not trust this receipt")
    assert "  - evidence worker-stdout: digest-mismatch" in lines[2:4]
    assert lines[-4] == "Receipt does NOT verify"
    assert lines[-3].startswith("integrity: VERIFICATION FAILED") and lines[-1].endswith("the body")
    assert "receipt intact" not in text
    assert "\nVERIFIED " not in text and not text.startswith("VERIFIED")
    assert "factory agent receipt" not in text
    assert "UNVERIFIED agent receipt" in text
    # No success colour anywhere (green is SGR 32); the verified twin does use it.
    colored = show(facts(value, failed=failed), color=True)
    assert "32m" not in colored
    assert "32m" in show(facts(value), color=True)


def test_reviewers_reasons_are_labelled_model_output_and_inert() -> None:
    notes = [
        ReviewNote("initial_review", "REQUEST_CHANGES", "Add a test.\n\x1b[2Jgo\u202eexe"),
        ReviewNote("final_review", "APPROVE", None, "not shown: this evidence file failed"),
    ]
    text = show(facts(receipt_json(make_receipt()), reviews=notes))
    assert "what the reviewers said  (model output, untrusted" in text
    assert "    Add a test." in text and "    \\x1b[2Jgo\\u202eexe" in text
    assert "\x1b" not in text and "\u202e" not in text
    assert "not shown: this evidence file failed" in text


def test_candidate_warnings_and_mutation_paths_are_shown_inert() -> None:
    from factory.agent.receipt import PathCollision
    from factory.agent.receipt_facts import MutationNote

    files = [ChangedPath(path="A.txt", state="added", mode="100644", bytes=1, sha256=HEX)]
    cand = candidate_record(files, "a").model_copy(
        update={
            "conversions_differ": True,
            "collisions": [PathCollision(kind="case-fold", paths=["A.txt", "a\u202e.txt"])],
        }
    )
    receipt = make_receipt(candidate=Candidates(initial=cand))
    notes = [
        MutationNote("final_review", "reviewer-mutation", ["ignored.log", "evil\x1b[2J"]),
        MutationNote("worker", "worker-git-mutation", None, "not shown: failed verification"),
    ]
    text = show(facts(receipt_json(receipt), mutations=notes))
    flat = " ".join(text.split())
    assert "a plain git add would not commit what was reviewed" in flat
    assert "case-fold collision (one file on macOS/Windows): A.txt | a\\u202e.txt" in flat
    assert "paths changed where a phase must not change them" in text
    assert "final_review reviewer-mutation" in text and "    ignored.log" in text
    assert "    evil\\x1b[2J" in text and "not shown: failed verification" in text
    assert "\x1b" not in text and "\u202e" not in text
    plain = show(receipt_json(make_receipt()))  # negative control: nothing to warn about
    assert "WARNING" not in plain and "paths changed where" not in plain


@pytest.mark.parametrize(
    ("changes", "failed", "words", "sgr"),
    [
        ({}, None, "Run APPROVED — receipt intact", "32m"),  # green
        (
            {"status": "rejected", "verdict": "REQUEST_CHANGES", "exit_code": 3},
            None,
            "Run REJECTED — receipt intact",
            "43m",  # amber background, never green
        ),
        ({}, ["revision does not match the body"], "Receipt does NOT verify", "41m"),
    ],
)
def test_the_terminal_headline_is_coloured_by_the_outcome(
    changes: dict[str, Any], failed: list[str] | None, words: str, sgr: str
) -> None:
    view = facts(receipt_json(make_receipt(**changes)), failed=failed)
    first = show(view, color=True).splitlines()[0]
    assert words in first and sgr in first
    assert ("32m" in first) is (sgr == "32m")


def test_at_80_columns_no_evidence_name_is_cut_into_dots() -> None:
    """A new user saw 'initial-candidate-status-ce0fc60f9437..' then a row of '.' alone."""
    text = show(receipt_json(make_receipt()), width=80)
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert rows, text
    for row in rows:
        name = row.split("│")[1].strip()
        assert name == "" or not set(name) <= {"."}, row
        if name.endswith("."):
            assert name.endswith("..."), row  # a whole shortened name, never a cut one
    assert all(len(line) <= 80 for line in text.splitlines())
