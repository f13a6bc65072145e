"""Hostile, deeply nested JSON (issue 12's hostile records): the decoder's recursion limit
is a typed refusal or a corrupt record naming its file, never a RecursionError crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.gitio.discover import discover
from factory.review import hooks
from factory.review.documents import strict_json_plain
from factory.review.errors import ReviewInputInvalid, ReviewRecordCorrupt, ReviewStoreBusy
from factory.review.lock import StoreLock
from factory.review.store import STATE_FILE, Corrupt, Loaded, ReviewStore
from tests.review import builders as b
from tests.review.cli_helpers import edit_parser, review, write_json

DEEP = b"[" * 100_000 + b"]" * 100_000
SHALLOW = b"[" * 20 + b"]" * 20


def test_deep_nesting_is_a_typed_refusal_and_shallow_nesting_parses() -> None:
    with pytest.raises(ReviewInputInvalid, match="nested too deeply"):
        strict_json_plain(DEEP, what="the input", limit=len(DEEP))
    value, _ = strict_json_plain(SHALLOW, what="the input", limit=len(SHALLOW))
    assert isinstance(value, list)


def test_a_deeply_nested_record_is_corrupt_and_spares_the_other_lineages(tmp_path: Path) -> None:
    store = ReviewStore(tmp_path / "common", lock_wait_s=0.2)
    bad = store.replace(None, b.started()).loaded
    good = store.replace(None, b.started(paths=("src/other.py",))).loaded
    (store.root / bad.lineage_id / STATE_FILE).write_bytes(b'{"schema": ' + DEEP + b"}")
    with pytest.raises(ReviewRecordCorrupt) as info:
        store.load(bad.lineage_id)
    assert bad.lineage_id in info.value.message
    scanned = {x.lineage_id: x for x in store.scan()}
    assert isinstance(scanned[bad.lineage_id], Corrupt)
    assert isinstance(scanned[good.lineage_id], Loaded)


def test_deeply_nested_lock_metadata_is_an_unknown_owner(tmp_path: Path) -> None:
    path = tmp_path / "LOCK"
    second = StoreLock(path, command="test/second", wait_s=0)
    with StoreLock(path, command="test/hold"):
        with pytest.raises(ReviewStoreBusy, match="test/hold"):  # the twin: owner named
            second.__enter__()
        path.write_bytes(b"[" * 4096)  # what a hostile writer leaves; the kernel lock holds
        with pytest.raises(ReviewStoreBusy, match="unknown owner"):
            second.__enter__()


def test_a_deeply_nested_lens_result_is_refused_and_changes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    deep = tmp_path / "deep.json"
    deep.write_bytes(b'{"findings": ' + DEEP + b', "evidence": ["read it"]}')
    ran = review("finalize", "--cwd", str(repo), "--result", str(deep), cwd=repo)
    assert ran.code == 2 and ran.doc["error"]["code"].startswith("review-"), ran.stderr
    assert "Traceback" not in ran.stderr and "nested too deeply" in ran.stdout.decode()
    doc = {"findings": [], "evidence": ["read the whole diff of src/parser.py"]}
    fine = review(
        "finalize",
        "--cwd",
        str(repo),
        "--result",
        str(write_json(tmp_path / "ok.json", doc)),
        cwd=repo,
    )
    assert fine.code == 0 and fine.doc["state"] == "validating"


@pytest.mark.parametrize(
    "data", [DEEP, b'{"schema": "factory.review-hooks/1", "hooks": []}'], ids=["deep", "list"]
)
def test_a_hostile_hooks_manifest_is_corrupt_not_a_crash(repo: Path, data: bytes) -> None:
    wt = discover(repo)
    path = wt.common_dir / "factory" / "review" / "hooks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    with pytest.raises(ReviewRecordCorrupt, match="kept as it is"):
        hooks.install(wt)
    assert path.read_bytes() == data
    path.write_bytes(json.dumps({"schema": "factory.review-hooks/1", "hooks": {}}).encode())
    assert hooks.install(wt)["left_alone"] == 0  # the twin: a valid manifest installs
