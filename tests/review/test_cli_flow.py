"""``factory review`` end to end on real repositories (issue 12): start, finalize with
results and evidence, corrections measured by git, refusals naming the next command."""

from __future__ import annotations

import json
from pathlib import Path

from factory.review.receipt import RECEIPT_FILE
from tests.review.conftest import (
    edit_parser,
    review,
    reviewer_doc,
    snapshot_bytes,
    store_root,
    write_json,
)
from tests.support.git import add_linked_worktree, git


def test_start_freezes_a_medium_change_and_start_again_resumes_it(repo: Path) -> None:
    edit_parser(repo, lines=4)
    (repo / "src" / "new_helper.py").write_text("def helper():\n    return 1\n")  # untracked
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"ignored operational state")
    ran = review("start", "--cwd", str(repo / "src"), cwd=repo.parent)
    assert ran.code == 0, ran.stderr
    doc = ran.doc
    assert doc["operation"] == "review/start" and doc["action"] == "created"
    assert doc["state"] == "reviewing" and doc["risk"]["level"] == "medium"
    assert [lens["lens"] for lens in doc["lenses"]] == ["reliability"]
    assert doc["lenses"][0]["binding_text"].startswith("factory.review-lens-binding/1\n")
    assert doc["counts"] == {"changed_files": 2, "changed_lines": 10, "golden_files": 0}
    assert doc["budget"]["correction_budget"] == 5
    assert doc["target"]["intended_untracked"] == 1
    assert any("factory review lens" in n for n in doc["next"])
    assert (store_root(repo) / doc["lineage"] / "review-state.json").is_file()
    again = review("start", "--cwd", str(repo), cwd=repo)
    assert again.doc["action"] == "resumed" and again.doc["lineage"] == doc["lineage"]


def test_a_linked_worktree_shares_the_store_of_the_common_dir(repo: Path, tmp_path: Path) -> None:
    wt = add_linked_worktree(repo, tmp_path / "wt")
    edit_parser(wt, lines=2)
    started = review("start", "--cwd", str(wt), cwd=wt)
    assert started.code == 0, started.stderr
    status = review("status", "--cwd", str(repo), cwd=repo)
    assert [x["lineage"] for x in status.doc["lineages"]] == [started.doc["lineage"]]
    assert status.doc["store"] == str(store_root(repo))


def test_a_different_candidate_while_a_lineage_is_open_is_refused_naming_next(repo: Path) -> None:
    edit_parser(repo, lines=2)
    first = review("start", "--cwd", str(repo), cwd=repo)
    (repo / "README.md").write_text("changed\n")
    before = snapshot_bytes(repo)
    second = review("start", "--cwd", str(repo), cwd=repo)
    assert second.code == 2
    assert second.doc["error"]["code"] == "review-live-lineage-exists"
    assert second.doc["next"] and second.doc["next"][0] in second.doc["error"]["message"]
    assert snapshot_bytes(repo) == before
    stop = review(
        "finalize", "--cwd", str(repo), "--lineage", first.doc["lineage"], "--failed", cwd=repo
    )
    assert stop.code == 3 and stop.doc["state"] == "escalated"  # the sanctioned exit
    third = review("start", "--cwd", str(repo), cwd=repo)
    assert third.code == 0 and third.doc["lineage"] != first.doc["lineage"]


def test_docs_only_selects_no_lens_and_evidence_approves_with_a_14_field_receipt(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nmore words\n")
    started = review("start", "--cwd", str(repo), cwd=repo)
    assert started.doc["risk"]["level"] == "low" and started.doc["lenses"] == []
    evidence = tmp_path / "evidence.txt"
    evidence.write_bytes(b"docs build: ok, 0 warnings\n")
    done = review("finalize", "--cwd", str(repo), "--evidence", str(evidence), cwd=repo)
    assert done.code == 0, done.stderr
    assert done.doc["state"] == "approved" and done.doc["applied"] == ["complete-review", "finish"]
    receipt = json.loads(Path(done.doc["receipt_path"]).read_bytes())
    assert list(receipt) == sorted(receipt) and len(receipt) == 14
    assert (
        receipt["schema"] == "factory.review-receipt/1" and receipt["terminal_state"] == "approved"
    )
    retry = review(
        "finalize",
        "--cwd",
        str(repo),
        "--lineage",
        done.doc["lineage"],
        "--evidence",
        str(evidence),
        cwd=repo,
    )
    assert retry.code == 0 and retry.doc["applied"] == []  # an identical retry is idempotent


def test_one_call_applies_result_then_evidence_and_stdin_evidence_works(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo)
    result = write_json(tmp_path / "r.json", reviewer_doc())
    done = review(
        "finalize",
        "--cwd",
        str(repo),
        "--result",
        str(result),
        "--evidence",
        "-",
        input=b"pytest: 12 passed\n",
        cwd=repo,
    )
    assert done.code == 0, done.stderr
    assert done.doc["applied"] == ["record-lens", "complete-review", "finish"]
    assert done.doc["state"] == "approved"


def _critical(path: str, line: int) -> dict[str, object]:
    return {
        "location": f"{path}:{line}",
        "severity": "CRITICAL",
        "claim": "f0 now negates its input",
        "proof_refs": ["test_f0 passes on base and fails on the candidate"],
        "evidence_class": "deterministic",
        "causal_disposition": "introduced",
    }


def _validation(tmp_path: Path, passed: bool = True) -> Path:
    check = {"passed": passed, "evidence": ["test_f0 passes again"]}
    doc = {
        "original_criteria": check,
        "correction_regression": {"passed": True, "evidence": ["suite: 12 passed"]},
        "follow_ups": [],
    }
    return write_json(tmp_path / f"v-{passed}.json", doc)


def test_a_correction_is_forecast_measured_by_git_validated_and_approved(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo, lines=6)  # 12 authored lines: budget 6
    review("start", "--cwd", str(repo), cwd=repo)
    result = write_json(tmp_path / "r.json", reviewer_doc([_critical("src/parser.py", 2)]))
    found = review("finalize", "--cwd", str(repo), "--result", str(result), cwd=repo)
    assert found.doc["state"] == "correction_required" and found.doc["fix_finding_ids"] == [
        "R3-001"
    ]
    assert found.doc["next"][0].endswith("--correction-lines N")
    early = review(
        "finalize", "--cwd", str(repo), "--validation", str(_validation(tmp_path)), cwd=repo
    )
    assert early.code == 2 and early.doc["error"]["code"] == "review-forecast-required"
    fc = review("finalize", "--cwd", str(repo), "--correction-lines", "2", cwd=repo)
    assert fc.doc["state"] == "correction_required" and fc.doc["budget"]["forecast"] == 2
    path = repo / "src" / "parser.py"  # restore f0: one line back (1 added + 1 deleted)
    path.write_text(path.read_text().replace("return -x + 0", "return x + 0"))
    fixed = review(
        "finalize", "--cwd", str(repo), "--validation", str(_validation(tmp_path)), cwd=repo
    )
    assert fixed.code == 0, fixed.stderr
    assert fixed.doc["state"] == "validating" and fixed.doc["budget"]["cumulative_lines"] == 2
    done = review(
        "finalize", "--cwd", str(repo), "--evidence", "-", input=b"suite passed\n", cwd=repo
    )
    receipt = json.loads(Path(done.doc["receipt_path"]).read_bytes())
    assert receipt["resolved_finding_ids"] == ["R3-001"]
    assert receipt["final_candidate_tree"] != receipt["initial_review_tree"]
    assert (
        receipt["fix_delta_hash"]
        != "sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def _to_correction(repo: Path, tmp_path: Path) -> None:
    edit_parser(repo, lines=6)
    review("start", "--cwd", str(repo), cwd=repo)
    result = write_json(tmp_path / "r.json", reviewer_doc([_critical("src/parser.py", 2)]))
    review(
        "finalize", "--cwd", str(repo), "--result", str(result), "--correction-lines", "3", cwd=repo
    )


def test_a_correction_outside_the_genesis_paths_is_refused_then_accepted_once_reverted(
    repo: Path, tmp_path: Path
) -> None:
    _to_correction(repo, tmp_path)
    (repo / "README.md").write_text("sneaky\n")
    path = repo / "src" / "parser.py"
    path.write_text(path.read_text().replace("return -x + 0", "return x + 0"))
    before = snapshot_bytes(repo)
    out = review(
        "finalize", "--cwd", str(repo), "--validation", str(_validation(tmp_path)), cwd=repo
    )
    assert out.code == 2 and out.doc["error"]["code"] == "review-fix-outside-genesis"
    assert snapshot_bytes(repo) == before
    (repo / "README.md").write_text("sample\n")
    ok = review(
        "finalize", "--cwd", str(repo), "--validation", str(_validation(tmp_path)), cwd=repo
    )
    assert ok.code == 0 and ok.doc["state"] == "validating"


def test_an_attempt_that_changes_nothing_escalates_at_once(repo: Path, tmp_path: Path) -> None:
    _to_correction(repo, tmp_path)
    out = review(
        "finalize", "--cwd", str(repo), "--validation", str(_validation(tmp_path)), cwd=repo
    )
    assert out.code == 3 and out.doc["state"] == "escalated"
    assert out.doc["escalation"]["reason"] == "zero_line_attempt"
    assert Path(out.doc["receipt_path"]).name == RECEIPT_FILE


def test_malformed_input_changes_nothing(repo: Path, tmp_path: Path) -> None:
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo)
    before = snapshot_bytes(repo)
    bad = write_json(tmp_path / "bad.json", {"findings": [], "evidence": ["n/a"]})
    out = review(
        "finalize",
        "--cwd",
        str(repo),
        "--result",
        str(bad),
        "--evidence",
        "-",
        input=b"x",
        cwd=repo,
    )
    assert out.code == 2 and out.doc["error"]["code"] == "review-input-invalid"
    assert snapshot_bytes(repo) == before
    preserved = write_json(
        tmp_path / "p.json", {"schema": "factory.review-preserved-lens-output/1"}
    )
    out = review("finalize", "--cwd", str(repo), "--result", str(preserved), cwd=repo)
    assert out.doc["error"]["code"] == "review-preserved-not-result"
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    out = review("finalize", "--cwd", str(repo), "--evidence", str(empty), cwd=repo)
    assert out.code == 2 and snapshot_bytes(repo) == before


def test_an_inconclusive_finding_escalates_with_exit_3_and_a_receipt(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo)
    finding = dict(_critical("src/elsewhere.py", 3))  # outside the snapshot: unknown causality
    result = write_json(tmp_path / "r.json", reviewer_doc([finding]))
    out = review("finalize", "--cwd", str(repo), "--result", str(result), cwd=repo)
    assert out.code == 3 and out.doc["escalation"]["reason"] == "inconclusive_finding"
    receipt = json.loads(Path(out.doc["receipt_path"]).read_bytes())
    assert receipt["terminal_state"] == "escalated"


def test_evidence_run_binds_the_tree_and_a_command_that_changes_it_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo)
    result = write_json(tmp_path / "r.json", reviewer_doc())
    review("finalize", "--cwd", str(repo), "--result", str(result), cwd=repo)
    before = snapshot_bytes(repo)
    bad = review(
        "finalize",
        "--cwd",
        str(repo),
        "--evidence-run",
        "--",
        "sh",
        "-c",
        "echo x > new.txt",
        cwd=repo,
    )
    assert bad.code == 4 and bad.doc["error"]["code"] == "review-evidence-tree-changed"
    assert snapshot_bytes(repo) == before
    (repo / "new.txt").unlink()
    ok = review(
        "finalize",
        "--cwd",
        str(repo),
        "--evidence-run",
        "--",
        "sh",
        "-c",
        "echo tests ok; echo log > run.log",
        cwd=repo,
    )
    assert ok.code == 0, ok.stderr
    assert ok.doc["state"] == "approved"  # run.log is ignored state, not the candidate


def test_evidence_run_that_fails_escalates(repo: Path, tmp_path: Path) -> None:
    (repo / "docs" / "guide.md").write_text("# new words\n")
    review("start", "--cwd", str(repo), cwd=repo)
    out = review(
        "finalize", "--cwd", str(repo), "--evidence-run", "--", "sh", "-c", "exit 1", cwd=repo
    )
    assert out.code == 3 and out.doc["escalation"]["reason"] == "verification_failed"


def test_show_is_sanitised_and_schema_prints_the_model_schema(repo: Path, tmp_path: Path) -> None:
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo)
    hostile = dict(_critical("src/parser.py", 2), claim="evil \x1b[2J\x1b]8;;http://x\x07 claim")
    result = write_json(tmp_path / "r.json", reviewer_doc([hostile]))
    review("finalize", "--cwd", str(repo), "--result", str(result), cwd=repo)
    shown = review("show", "--cwd", str(repo), cwd=repo)
    assert shown.code == 0 and b"\x1b[2J" not in shown.stdout and b"\x07" not in shown.stdout
    assert "R3-001" in shown.stdout.decode()
    schema = review("schema", "validator", cwd=repo)
    assert schema.doc["$id"] == "factory.review-validator-input/1"


def test_status_reports_a_corrupt_record_and_keeps_going(repo: Path, tmp_path: Path) -> None:
    (repo / "docs" / "guide.md").write_text("# a\n")
    a = review("start", "--cwd", str(repo), cwd=repo).doc["lineage"]
    review("finalize", "--cwd", str(repo), "--failed", cwd=repo)
    (repo / "docs" / "guide.md").write_text("# b\n")
    b = review("start", "--cwd", str(repo), cwd=repo).doc["lineage"]
    state = store_root(repo) / a / "review-state.json"
    state.write_bytes(state.read_bytes()[:-40])
    status = review("status", "--cwd", str(repo), cwd=repo)
    entries = {x["lineage"]: x for x in status.doc["lineages"]}
    assert entries[a]["corrupt"]["code"] == "review-record-corrupt"
    assert entries[b]["state"] == "reviewing" and status.doc["corrupt"] == 1
    done = review("finalize", "--cwd", str(repo), "--evidence", "-", input=b"ok: built\n", cwd=repo)
    assert done.code == 0 and done.doc["lineage"] == b
    assert git(repo, "status", "--porcelain") != ""


def test_historically_tracked_paths_stay_bound_although_an_ignore_rule_matches(repo: Path) -> None:
    (repo / "keep.log").write_text("tracked before the rule\n")
    git(repo, "add", "-f", "keep.log")
    git(repo, "commit", "-qm", "a tracked log")
    (repo / "keep.log").write_text("changed under the ignore rule\n")  # *.log is ignored
    (repo / "fresh.log").write_text("ignored operational state\n")
    started = review("start", "--cwd", str(repo), cwd=repo)
    assert started.code == 0, started.stderr
    assert started.doc["counts"]["changed_files"] == 1  # keep.log, not fresh.log
    shown = review("show", "--cwd", str(repo), cwd=repo)
    assert shown.code == 0
    git(repo, "rm", "-q", "--cached", "keep.log")  # untracked now, still on disk and ignored
    status = review("start", "--cwd", str(repo), cwd=repo)
    assert status.doc["lineage"] == started.doc["lineage"]  # still bound: the same candidate
