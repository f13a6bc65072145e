"""``factory receipt show`` as an operator runs it: it verifies first (issue 9 §2).

Real receipts from the real CLI with in-process fake profiles (``fake_factory.py``), then
``factory receipt show`` as a subprocess.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.cli_helpers import agent_args, evidence_files, fake
from tests.support.cli import run_factory
from tests.support.layout import Layout


@pytest.fixture
def rejected(layout: Layout) -> Layout:
    proc = fake("reject", agent_args(layout))  # worker, review, repair, review
    assert proc.returncode == 3, proc.stderr
    return layout


def show(layout: Layout, *extra: str) -> tuple[int, str, str]:
    proc = run_factory(["receipt", "show", str(layout.receipt), *extra], env=_wide())
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def _wide() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "120"}


def test_a_verified_receipt_says_so_first_and_exits_0(rejected: Layout) -> None:
    code, out, err = show(rejected)
    assert code == 0, err
    assert out.startswith("Run REJECTED — receipt intact\nintegrity: VERIFIED revision, canonical")
    assert " (checked 20" in out.split("\n\n")[0]
    assert "VERIFICATION FAILED" not in out and err == ""
    # The reviewers' reasons come from the verdict evidence, labelled as model output.
    assert "what the reviewers said  (model output, untrusted" in out
    assert "    review 1: REQUEST_CHANGES" in out and "    review 2: REQUEST_CHANGES" in out


@pytest.mark.parametrize("target", ["worker-stdout-", "final-review-verdict-"])
def test_altered_evidence_gets_the_banner_first_and_last_and_exit_4(
    rejected: Layout, target: str
) -> None:
    path = next(p for p in evidence_files(rejected) if p.name.startswith(target))
    path.chmod(0o600)
    path.write_bytes(path.read_bytes().replace(b"review", b"REVIEW") + b"x")
    code, out, err = show(rejected)
    assert code == 4
    lines = out.splitlines()
    role = target.rstrip("-")
    assert lines[0] == "Receipt does NOT verify"
    assert lines[1].startswith("integrity: VERIFICATION FAILED: do not trust this receipt")
    assert f"  - evidence {role}: size-mismatch" in lines
    assert lines[-2].startswith("integrity: VERIFICATION FAILED")
    assert "VERIFIED " not in out.replace("UNVERIFIED ", "")
    assert "body digest matches" not in out
    assert err.startswith(f"factory: receipt-verification-failed: evidence {role}: size-mismatch")
    if target.endswith("verdict-"):
        # An altered verdict file is named, never quoted.
        assert "REVIEW 2" not in out and "review 2:" not in out
        assert "not shown: this evidence file failed verification" in out


def test_diff_shows_the_bound_patch_of_each_candidate(rejected: Layout) -> None:
    code, out, _ = show(rejected, "--diff")
    assert code == 0
    assert "initial candidate patch (bound evidence)" in out
    assert "repaired candidate patch (bound evidence)" in out
    assert "+    return a + b" in out and "-    return a - b" in out
    _, plain, _ = show(rejected)
    assert "candidate patch (bound evidence)" not in plain  # negative control


def test_an_edited_receipt_body_fails_like_altered_evidence(rejected: Layout) -> None:
    data = rejected.receipt.read_bytes()
    rejected.receipt.write_bytes(data.replace(b'"status":"rejected"', b'"status":"completed"'))
    code, out, _ = show(rejected)
    assert code == 4
    assert "  - revision does not match the body" in out.splitlines()[1:6]


def test_a_missing_receipt_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_factory(["receipt", "show", str(tmp_path / "nope.json")])
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"factory: receipt-missing:" in proc.stderr


def test_a_hostile_path_in_a_refusal_reaches_stderr_inert(rejected: Layout) -> None:
    taken = rejected.out / "page\x1b]0;owned\x07\u202e.html"
    taken.write_text("mine\n")
    proc = run_factory(["receipt", "show", str(rejected.receipt), "--html", str(taken)])
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert err.startswith("factory: output-exists: ") and err.count("\n") == 1
    assert "page\\x1b]0;owned\\x07\\u202e.html" in err
    assert "\x1b" not in err and "\u202e" not in err
    assert taken.read_text() == "mine\n"  # refused before any effect


def test_a_copied_receipt_names_its_own_evidence_or_says_it_is_not_beside_it(
    rejected: Layout, tmp_path: Path
) -> None:
    import shutil

    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(rejected.receipt, alone / "receipt.json")
    proc = run_factory(["receipt", "show", str(alone / "receipt.json")], env=_wide())
    out = " ".join(proc.stdout.decode().split())
    assert proc.returncode == 4  # its evidence cannot be re-checked here
    assert f"evidence folder: NOT beside this receipt (looked in {alone}" in out
    # The twin: the receipt copied with its evidence folder names the copy's folder.
    both = tmp_path / "both"
    shutil.copytree(rejected.out, both)
    code_out = run_factory(["receipt", "show", str(both / "receipt.json")], env=_wide())
    text = " ".join(code_out.stdout.decode().split())
    assert code_out.returncode == 0, code_out.stderr.decode()
    assert f"evidence folder: {both}" in text and "NOT beside" not in text
    assert str(rejected.out) not in text.replace(str(both), "")


def test_a_reviewer_format_failure_shows_what_the_reviewer_wrote(layout: Layout) -> None:
    proc = fake("prose", agent_args(layout))
    assert proc.returncode == 4, proc.stderr
    code, out, _ = show(layout)
    assert code == 0
    assert "what the reviewer wrote instead (model output" in out
    assert "Looks fine to me, ship it" in out and "<b>really</b>" in out
    assert "\x1b" not in out  # the escape is shown inert, never sent to the terminal


def test_a_reviewer_with_a_verdict_shows_its_summary_not_its_stdout(rejected: Layout) -> None:
    _, out, _ = show(rejected)
    assert "review 1: REQUEST_CHANGES" in out
    assert "what the reviewer wrote instead" not in out


def _show_into_closed_pipe(layout: Layout, *extra: str) -> tuple[int, bytes]:
    """``factory receipt show … | head -0``: the reader is gone before the first write."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "factory", "receipt", "show", str(layout.receipt), *extra],
            stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE,
            env=_wide(), timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("extra", [(), ("--diff",)])
def test_a_reader_that_goes_away_is_not_a_failure(rejected: Layout, extra: tuple[str]) -> None:
    code, err = _show_into_closed_pipe(rejected, *extra)
    assert code == 0, err  # the receipt verified: a closed pipe changes nothing of that
    assert b"Traceback" not in err and b"internal" not in err


def test_a_closed_pipe_does_not_hide_a_failed_verification(rejected: Layout) -> None:
    """The twin: a tampered receipt still exits 4 and says so on stderr."""
    path = next(p for p in evidence_files(rejected) if p.name.startswith("worker-stdout-"))
    path.chmod(0o600)
    path.write_bytes(path.read_bytes() + b"x")
    code, err = _show_into_closed_pipe(rejected)
    assert code == 4 and b"receipt-verification-failed" in err
