"""The CAS store: atomic create, compare-and-swap, idempotent retries, fail-closed loads
that name the lineage, one bad record never breaking the others, the OS lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from factory.review import machine
from factory.review.errors import ReviewCasConflict, ReviewRecordCorrupt, ReviewStoreBusy
from factory.review.receipt import RECEIPT_FILE
from factory.review.state import ReviewState
from factory.review.store import STATE_FILE, Corrupt, Loaded, ReviewStore, record_bytes, revision_of
from tests.review import builders as b


def _store(tmp_path: Path) -> ReviewStore:
    return ReviewStore(tmp_path / "common", lock_wait_s=0.2)


def _created(tmp_path: Path, **kw: object) -> tuple[ReviewStore, Loaded]:
    store = _store(tmp_path)
    committed = store.replace(None, b.started(**kw))
    return store, committed.loaded


def _validating(s: ReviewState) -> ReviewState:
    return machine.apply(b.record_all(s, {}), machine.CompleteReview(None))


def test_create_then_load_round_trips_with_canonical_bytes(tmp_path: Path) -> None:
    store, loaded = _created(tmp_path)
    assert store.root == tmp_path / "common" / "factory" / "review" / "v1"
    data = (store.root / loaded.lineage_id / STATE_FILE).read_bytes()
    assert data == record_bytes(loaded.state)[0]
    again = store.load(loaded.lineage_id)
    assert again.state == loaded.state and again.revision == revision_of(loaded.state)
    assert again.receipt == "none"


def test_replace_needs_the_expected_revision_and_an_identical_retry_is_idempotent(
    tmp_path: Path,
) -> None:
    store, loaded = _created(tmp_path)
    nxt = _validating(loaded.state)
    first = store.replace(loaded.revision, nxt)
    assert first.written
    retry = store.replace(loaded.revision, nxt)  # stale expected revision, same successor
    assert not retry.written and retry.loaded.revision == first.loaded.revision
    other = machine.apply(loaded.state, machine.Abandon(None))
    with pytest.raises(ReviewCasConflict):
        store.replace(loaded.revision, other)
    assert store.load(loaded.lineage_id).state.state == "validating"


def test_a_second_create_of_the_same_lineage_is_a_cas_conflict_unless_identical(
    tmp_path: Path,
) -> None:
    store, loaded = _created(tmp_path)
    assert not store.replace(None, loaded.state).written
    changed = b.started(lines=7)
    with pytest.raises(ReviewCasConflict):
        store.replace(None, changed)


def test_the_store_refuses_illegal_successors_whoever_computed_them(tmp_path: Path) -> None:
    store, loaded = _created(tmp_path)
    forged = loaded.state.model_copy(update={"correction_budget": 200, "changed_lines": 400})
    with pytest.raises(AssertionError):
        store.replace(loaded.revision, forged)
    approved = machine.apply(_validating(loaded.state), machine.Finish(b.evidence()))
    committed = store.replace(loaded.revision, _validating(loaded.state))
    done = store.replace(committed.loaded.revision, approved)
    with pytest.raises(AssertionError, match="terminal"):
        escalated = machine.apply(
            _validating(loaded.state), machine.Finish(b.evidence(failed=True))
        )
        store.replace(done.loaded.revision, escalated)


def _write_raw(store: ReviewStore, lineage: str, data: bytes) -> None:
    (store.root / lineage / STATE_FILE).write_bytes(data)


def _hostile_variants(store: ReviewStore, loaded: Loaded) -> dict[str, bytes]:
    good = record_bytes(loaded.state)[0]
    doc = json.loads(good)
    out = {"truncated": good[: len(good) // 2]}
    wrong_rev = dict(doc, revision="sha256:" + "0" * 64)
    out["revision-mismatch"] = json.dumps(wrong_rev).encode()
    tampered = json.loads(good)
    tampered["state"]["changed_lines"] = 400  # budget no longer follows
    out["state-edited-keeping-revision"] = json.dumps(tampered).encode()
    retired = json.loads(good)
    retired["state"]["zero_edit_escalation"] = True  # a field this version does not know
    from factory.documents.canonical import digest_plain
    from factory.review.documents import STATE_TAG

    retired["revision"] = digest_plain(STATE_TAG, retired["state"])
    out["unknown-field"] = json.dumps(retired).encode()
    out["record-extra-key"] = json.dumps(dict(doc, note="x")).encode()
    out["not-json"] = b"\x00\x01"
    return out


@pytest.mark.parametrize(
    "variant",
    [
        "truncated",
        "revision-mismatch",
        "state-edited-keeping-revision",
        "unknown-field",
        "record-extra-key",
        "not-json",
    ],
)
def test_hostile_records_fail_closed_naming_the_lineage_and_spare_the_others(
    tmp_path: Path, variant: str
) -> None:
    store, bad = _created(tmp_path)
    good = store.replace(None, b.started(paths=("src/other.py",))).loaded
    _write_raw(store, bad.lineage_id, _hostile_variants(store, bad)[variant])
    with pytest.raises(ReviewRecordCorrupt) as info:
        store.load(bad.lineage_id)
    assert bad.lineage_id in info.value.message
    scanned = {x.lineage_id: x for x in store.scan()}
    assert isinstance(scanned[bad.lineage_id], Corrupt)
    assert isinstance(scanned[good.lineage_id], Loaded)  # one bad record breaks nothing else
    nxt = _validating(good.state)
    assert store.replace(good.revision, nxt).written  # and writes to others still work


def test_a_receipt_that_is_not_the_derivation_fails_closed(tmp_path: Path) -> None:
    store, loaded = _created(tmp_path)
    v = store.replace(loaded.revision, _validating(loaded.state)).loaded
    done = store.replace(v.revision, machine.apply(v.state, machine.Finish(b.evidence()))).loaded
    assert done.receipt == "missing"
    path = store.write_receipt(done)
    assert store.load(done.lineage_id).receipt == "ok"
    receipt = json.loads(path.read_bytes())
    assert len(receipt) == 14
    forged = dict(receipt, resolved_finding_ids=["R3-001"])
    path.write_text(json.dumps(forged))
    with pytest.raises(ReviewRecordCorrupt, match="derives"):
        store.load(done.lineage_id)
    with pytest.raises(ReviewRecordCorrupt):
        store.write_receipt(done)  # never overwritten to hide the mismatch


def test_a_receipt_beside_a_non_terminal_state_fails_closed(tmp_path: Path) -> None:
    store, loaded = _created(tmp_path)
    (store.root / loaded.lineage_id / RECEIPT_FILE).write_text("{}")
    with pytest.raises(ReviewRecordCorrupt, match="has a receipt"):
        store.load(loaded.lineage_id)


def test_crash_residue_is_ignored_and_a_folder_without_record_is_named(tmp_path: Path) -> None:
    store, loaded = _created(tmp_path)
    (store.root / ".tmp-review-ffff-123").mkdir()
    (store.root / loaded.lineage_id / ".review-state.json.abcd.tmp").write_text("half")
    assert [x.lineage_id for x in store.scan()] == [loaded.lineage_id]
    (store.root / "review-deadbeef").mkdir()
    with pytest.raises(ReviewRecordCorrupt, match="review-deadbeef"):
        store.load("review-deadbeef")


def test_a_symlinked_record_is_not_followed(tmp_path: Path) -> None:
    store, loaded = _created(tmp_path)
    path = store.root / loaded.lineage_id / STATE_FILE
    real = tmp_path / "elsewhere.json"
    real.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(real)
    with pytest.raises(ReviewRecordCorrupt):
        store.load(loaded.lineage_id)


def test_concurrent_replaces_one_wins_the_other_gets_a_cas_conflict(tmp_path: Path) -> None:
    store_a, loaded = _created(tmp_path)
    store_b = ReviewStore(tmp_path / "common", lock_wait_s=5.0)
    results: dict[str, object] = {}
    a = _validating(loaded.state)
    c = machine.apply(loaded.state, machine.Abandon(None))
    barrier = threading.Barrier(2)

    def go(name: str, store: ReviewStore, new: ReviewState) -> None:
        barrier.wait()
        try:
            results[name] = store.replace(loaded.revision, new).written
        except ReviewCasConflict as exc:
            results[name] = exc

    threads = [
        threading.Thread(
            target=go, args=("a", ReviewStore(tmp_path / "common", lock_wait_s=5.0), a)
        ),
        threading.Thread(target=go, args=("c", store_b, c)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = sorted(type(v).__name__ for v in results.values())
    assert outcomes == ["ReviewCasConflict", "bool"]
    assert store_a.load(loaded.lineage_id).state.state in ("validating", "escalated")


_HOLD = """
import sys, time
from pathlib import Path
from factory.review.lock import StoreLock
with StoreLock(Path(sys.argv[1]), command="test/hold"):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_busy_lock_names_its_owner_and_is_never_broken_by_age(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.root.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(store.root / "LOCK")], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(ReviewStoreBusy) as info, store.locked("test/second"):
            pass
        assert f"pid {holder.pid}" in info.value.message and "test/hold" in info.value.message
        holder.send_signal(signal.SIGKILL)  # the kernel releases it with the process
        holder.wait(timeout=30)
        with store.locked("test/after"):
            meta = json.loads((store.root / "LOCK").read_text())
        assert meta["pid"] == os.getpid() and meta["schema"] == "factory.review-store-lock/1"
    finally:
        holder.kill()
        holder.wait(timeout=30)
