"""invalidate and recover on real repositories (issue 13): pristine-only invalidation with
CAS and idempotent retry; successors of generation + 1 that never touch the predecessor;
forks refused; scope_changed only for a real change; the exact LF-only authorization."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.review.authorization import binding_text
from factory.review.errors import ReviewCasConflict, ReviewRefused
from factory.review.gate_errors import AuthorizationRefused
from factory.review.recovery import invalidate, recover
from tests.review.cli_helpers import edit_parser, review, snapshot_bytes
from tests.review.gates_support import approve, begin, code, finish, gate, loaded


def _guide(repo: Path, text: str = "# guide\n\nreviewed words\n") -> None:
    (repo / "docs" / "guide.md").write_text(text)


def test_invalidate_ends_a_pristine_lineage_and_an_identical_retry_is_idempotent(
    repo: Path,
) -> None:
    edit_parser(repo)
    lid = begin(repo)["lineage"]
    rev = loaded(repo, lid).revision
    done = invalidate(repo, lid, rev, "started on the wrong candidate")
    assert done["state"] == "invalidated" and done["written"]
    again = invalidate(repo, lid, rev, "started on the wrong candidate")
    assert again["written"] is False and again["store_revision"] == done["store_revision"]
    assert done["next"][0].startswith("factory review recover") and "invalidated" in done["next"][0]
    with pytest.raises(ReviewRefused):  # a terminal state has no successor
        invalidate(repo, lid, done["store_revision"], "again")


def test_invalidate_needs_the_expected_revision_and_a_pristine_lineage(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    lid = begin(repo)["lineage"]
    with pytest.raises(ReviewCasConflict):
        invalidate(repo, lid, "sha256:" + "0" * 64, "stale")
    result = tmp_path / "r.json"
    result.write_text('{"findings": [], "evidence": ["read the whole diff"]}')
    review("finalize", "--cwd", str(repo), "--result", str(result), cwd=repo)
    state = loaded(repo, lid)
    with pytest.raises(ReviewRefused) as exc:
        invalidate(repo, lid, state.revision, "after judgement")
    assert exc.value.code == "review-wrong-state" or exc.value.code == "review-not-pristine"
    assert exc.value.next and exc.value.next[0] in exc.value.message


def test_invalidate_refuses_judged_reviewing_lineages_naming_finalize_failed(repo: Path) -> None:
    (repo / "src" / "payments.py").write_text("def charge(x):\n    return x\n")  # high risk
    lid = begin(repo)["lineage"]
    from factory.review import machine
    from tests.review import builders as b

    s = loaded(repo, lid).state
    judged = machine.apply(s, machine.RecordLens(b.lens_result(s, s.lenses[0], [])))
    with pytest.raises(ReviewRefused) as exc:
        machine.apply(judged, machine.Invalidate("too late"))
    assert exc.value.code == "review-not-pristine"
    assert any("--failed" in n for n in exc.value.next)


def _scope_changed(repo: Path, tmp_path: Path) -> tuple[str, str]:
    _guide(repo)
    lid = str(approve(repo, tmp_path)["lineage"])
    _guide(repo, "# guide\n\nchanged after approval\n")
    return lid, loaded(repo, lid).revision


def test_recover_scope_changed_creates_generation_two_and_never_touches_the_predecessor(
    repo: Path, tmp_path: Path
) -> None:
    lid, rev = _scope_changed(repo, tmp_path)
    denied = gate(repo, "pre-commit")
    assert code(denied) == "receipt-discovery/scope-changed"
    assert denied.context.next[0].startswith(f"factory review recover --predecessor-lineage {lid}")
    before = {k: v for k, v in snapshot_bytes(repo).items() if k.startswith(lid)}
    kw = dict(
        predecessor=lid,
        expected_revision=rev,
        disposition="scope_changed",
        reason="edited after approval",
        actor="maintainer",
        authorization=None,
    )
    made = recover(repo, **kw)  # type: ignore[arg-type]
    assert made["generation"] == 2 and made["state"] == "reviewing" and made["lineage"] != lid
    assert made["recovery"]["lineage_id"] == lid and made["recovery"]["revision"] == rev
    after = {k: v for k, v in snapshot_bytes(repo).items() if k.startswith(lid)}
    assert after == before  # the predecessor's bytes never change
    again = recover(repo, **kw)  # type: ignore[arg-type]
    assert again["action"] == "resumed" and again["lineage"] == made["lineage"]
    _guide(repo, "# guide\n\nyet another candidate\n")
    with pytest.raises(ReviewRefused) as fork:
        recover(repo, **kw)  # type: ignore[arg-type]
    assert fork.value.code == "review-recover-fork"
    _guide(repo, "# guide\n\nchanged after approval\n")
    finish(repo, tmp_path)  # the successor reviews and approves the new candidate
    allowed = gate(repo, "pre-commit")
    assert allowed.allowed and allowed.context.lineage_id == made["lineage"]
    assert allowed.context.generation == 2


def test_recover_scope_changed_refuses_an_unchanged_candidate_and_a_wrong_revision(
    repo: Path, tmp_path: Path
) -> None:
    _guide(repo)
    lid = str(approve(repo, tmp_path)["lineage"])
    rev = loaded(repo, lid).revision
    kw = dict(
        predecessor=lid, disposition="scope_changed", reason="r", actor="a", authorization=None
    )
    with pytest.raises(ReviewRefused) as same:
        recover(repo, expected_revision=rev, **kw)  # type: ignore[arg-type]
    assert same.value.code == "review-recover-not-eligible"
    assert same.value.next[0] == "factory review validate --gate pre-commit"
    _guide(repo, "# guide\n\nchanged\n")
    with pytest.raises(ReviewRefused) as stale:
        recover(repo, expected_revision="sha256:" + "1" * 64, **kw)  # type: ignore[arg-type]
    assert stale.value.code == "review-recover-revision-mismatch"
    with pytest.raises(ReviewRefused) as wrong:
        recover(repo, expected_revision=rev, **{**kw, "disposition": "escalated"})  # type: ignore[arg-type]
    assert wrong.value.code == "review-recover-not-eligible"


def test_escalated_recovery_needs_the_exact_lf_only_authorization(
    repo: Path, tmp_path: Path
) -> None:
    _guide(repo)
    begin(repo)
    lid = str(finish(repo, tmp_path, failed=True)["lineage"])
    rev = loaded(repo, lid).revision
    assert code(gate(repo, "pre-commit")) == "receipt-validation/escalated"
    kw = dict(
        predecessor=lid,
        expected_revision=rev,
        disposition="escalated",
        reason="flaky suite, rerun approved",
        actor="ana",
    )
    with pytest.raises(AuthorizationRefused) as missing:
        recover(repo, authorization=None, **kw)
    expected = missing.value.expected.encode()
    assert expected.startswith(b"factory.review-recovery-authorization/1\n")
    assert f"predecessor_lineage={lid}\npredecessor_revision={rev}\n".encode() in expected
    auth = tmp_path / "auth.txt"
    for bad, why in (
        (expected.replace(b"\n", b"\r\n"), "CR"),
        (expected.replace(b"actor=ana", b"actor=bob"), "line 5"),
        (expected[:-1], "LF"),
        (b"approved by ana\n", "lines"),
    ):
        auth.write_bytes(bad)
        with pytest.raises(AuthorizationRefused) as refused:
            recover(repo, authorization=auth, **kw)
        assert why in refused.value.message
    auth.write_bytes(expected)
    made = recover(repo, authorization=auth, **kw)
    assert made["generation"] == 2 and made["recovery"]["authorization_sha256"]
    target = loaded(repo, made["lineage"]).state.initial_snapshot.identity
    assert expected == binding_text(lid, rev, target, "ana", "flaky suite, rerun approved")


def test_the_cli_refusal_prints_the_expected_authorization(repo: Path, tmp_path: Path) -> None:
    _guide(repo)
    begin(repo)
    lid = str(finish(repo, tmp_path, failed=True)["lineage"])
    rev = loaded(repo, lid).revision
    ran = review(
        "recover",
        "--cwd",
        str(repo),
        "--predecessor-lineage",
        lid,
        "--expected-predecessor-revision",
        rev,
        "--disposition",
        "escalated",
        "--reason",
        "rerun",
        "--actor",
        "ana",
        cwd=repo,
    )
    assert ran.code == 2 and ran.doc["error"]["code"] == "review-authorization-invalid"
    assert ran.doc["expected_authorization"].startswith("factory.review-recovery-authorization/1\n")
    assert ran.doc["next"][0] in ran.doc["error"]["message"]


def test_start_on_a_recovered_target_resumes_the_successor(repo: Path, tmp_path: Path) -> None:
    lid, rev = _scope_changed(repo, tmp_path)
    made = recover(
        repo,
        predecessor=lid,
        expected_revision=rev,
        disposition="scope_changed",
        reason="edited after approval",
        actor="maintainer",
        authorization=None,
    )
    again = begin(repo)
    assert again["action"] == "resumed" and again["lineage"] == made["lineage"]
    assert again["generation"] == 2


def test_an_invalidated_lineage_recovers_into_a_fresh_generation(repo: Path) -> None:
    edit_parser(repo)
    lid = begin(repo)["lineage"]
    done = invalidate(repo, lid, loaded(repo, lid).revision, "wrong candidate")
    assert code(gate(repo, "pre-commit", lineage=lid)) == "receipt-validation/invalidated"
    made = recover(
        repo,
        predecessor=lid,
        expected_revision=done["store_revision"],
        disposition="invalidated",
        reason="start again",
        actor="maintainer",
        authorization=None,
    )
    assert made["generation"] == 2 and made["state"] == "reviewing"
    assert made["recovery"]["disposition"] == "invalidated"
