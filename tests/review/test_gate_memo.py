"""The gate's hook path (issue 13's speed target): the gate memo of the store's facts and the
kept pre-commit target answer an allow without pydantic — and only ever the allow the full
path gives for the same bytes. Every reuse has its negative control: a changed record,
receipt, memo, code, checkout, file mode or attributes file is a miss, never a stale allow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from factory.gitio.discover import discover
from factory.review import receipt as receipt_mod
from factory.review import store as store_mod
from factory.review.gates import livememo, memo
from factory.review.gates import validate as quick
from factory.review.gates.live import GateRequest
from factory.review.gates.validate import validate
from tests.review.cli_helpers import review, store_root
from tests.review.gates_support import approve, code, commit, gate
from tests.support.git import git


def _approved(repo: Path, tmp: Path) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    (repo / "docs" / "notes.md").write_text("an untracked note, part of the candidate\n")
    approve(repo, tmp)


def _full(repo: Path, gate_name: str) -> dict[str, object]:
    return validate(repo, GateRequest(gate=gate_name)).to_json_value()  # type: ignore[arg-type]


def _quick(repo: Path, gate_name: str) -> dict[str, object] | None:
    return quick.replayed_allow(repo, GateRequest(gate=gate_name))  # type: ignore[arg-type]


def _stage_all(repo: Path) -> None:
    git(repo, "add", "-A")


def _commit(repo: Path) -> None:
    commit(repo)


@pytest.mark.parametrize(
    ("gate_name", "prepare"),
    [
        ("pre-commit", lambda repo: None),
        ("pre-commit", _stage_all),
        ("pre-push", _commit),
    ],
    ids=["pre-commit-unstaged", "pre-commit-staged", "pre-push-committed"],
)
def test_the_hook_path_answers_exactly_what_the_full_path_answers(
    repo: Path, tmp_path: Path, gate_name: str, prepare: Callable[[Path], None]
) -> None:
    _approved(repo, tmp_path)
    prepare(repo)
    assert _quick(repo, gate_name) is None  # no memo yet: the caller validates in full
    full = _full(repo, gate_name)
    assert full["allowed"] is True
    assert _quick(repo, gate_name) == full  # the memo, and a target derived now
    assert _quick(repo, gate_name) == full  # the memo, and the kept target


def test_the_cli_prints_the_same_bytes_either_way_and_says_which(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    full = review("validate", "--gate", "pre-commit", "--no-memo", "--json", cwd=repo)
    fast = review("validate", "--gate", "pre-commit", "--json", cwd=repo)
    assert full.code == fast.code == 0
    assert full.stdout == fast.stdout
    assert "replayed from the gate memo" in fast.stderr
    assert "replayed" not in full.stderr


def test_a_denial_always_comes_from_the_full_path(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    (repo / "docs" / "guide.md").write_text("# guide\n\nedited after the review\n")
    assert _quick(repo, "pre-commit") is None
    assert code(gate(repo, "pre-commit")) == "receipt-discovery/scope-changed"


def _lineage_dir(repo: Path) -> Path:
    root = store_root(repo)
    (folder,) = [p for p in root.iterdir() if p.is_dir() and p.name.startswith("review-")]
    return folder


def _flip_state(repo: Path) -> None:
    path = _lineage_dir(repo) / "review-state.json"
    path.write_bytes(path.read_bytes().replace(b'"approved"', b'"reviewing"', 1))


def _drop_receipt(repo: Path) -> None:
    (_lineage_dir(repo) / "review-receipt.json").unlink()


def _symlinked_receipt(repo: Path) -> None:
    path = _lineage_dir(repo) / "review-receipt.json"
    copy = path.parent.parent / "receipt-copy.json"
    copy.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(copy)


def _new_lineage_folder(repo: Path) -> None:
    (store_root(repo) / "review-0000000000000000").mkdir()


@pytest.mark.parametrize(
    "change",
    [_flip_state, _drop_receipt, _symlinked_receipt, _new_lineage_folder],
    ids=["record-edited", "receipt-removed", "receipt-symlinked", "lineage-folder-added"],
)
def test_any_change_to_what_a_load_reads_is_a_miss(
    repo: Path, tmp_path: Path, change: Callable[[Path], None]
) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    root = store_root(repo)
    before = memo.memo_key(root)
    change(repo)
    assert memo.memo_key(root) != before
    assert memo.load(root) is None and _quick(repo, "pre-commit") is None
    assert not gate(repo, "pre-commit").allowed  # the full path judges the new bytes


def test_what_a_load_does_not_read_keeps_the_key(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    root = store_root(repo)
    before = memo.memo_key(root)
    folder = _lineage_dir(repo)
    (root / ".tmp-review-partial").mkdir()  # not a lineage name
    (folder / "evidence").mkdir(exist_ok=True)
    (folder / "evidence" / "scratch").write_bytes(b"not read by a load")
    assert memo.memo_key(root) == before
    assert _quick(repo, "pre-commit") == _full(repo, "pre-commit")


@pytest.mark.parametrize(
    "bad",
    [b"", b"{not json", b'{"schema": "factory.review-gate-memo/1", "key": "0", "graph": {}}'],
    ids=["empty", "torn", "another-key"],
)
def test_a_memo_that_is_torn_or_for_other_bytes_is_a_miss(
    repo: Path, tmp_path: Path, bad: bytes
) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    (store_root(repo) / memo.MEMO_FILE).write_bytes(bad)
    assert memo.load(store_root(repo)) is None and _quick(repo, "pre-commit") is None


def test_a_memo_with_the_right_key_but_a_broken_body_is_a_miss(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    path = store_root(repo) / memo.MEMO_FILE
    doc = json.loads(path.read_bytes())
    del doc["graph"]["valid"][0]["revision"]
    path.write_text(json.dumps(doc))
    assert memo.load(store_root(repo)) is None


@pytest.fixture
def fresh_identity() -> Iterator[None]:
    memo.code_identity.cache_clear()
    yield
    memo.code_identity.cache_clear()


def test_the_code_identity_follows_every_source_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_identity: None
) -> None:
    package = tmp_path / "factory"
    (package / "review").mkdir(parents=True)
    source = package / "review" / "store.py"
    source.write_text("X = 1\n")
    monkeypatch.setattr(memo, "_PACKAGE", package)
    first = memo.code_identity()
    memo.code_identity.cache_clear()
    assert memo.code_identity() == first  # the same files: the same identity
    (package / "review" / "__pycache__").mkdir()
    (package / "review" / "__pycache__" / "store.cpython.pyc").write_bytes(b"ignored")
    memo.code_identity.cache_clear()
    assert memo.code_identity() == first
    source.write_text("X = 2  # edited\n")
    memo.code_identity.cache_clear()
    assert memo.code_identity() != first


def test_the_names_the_memo_reads_are_the_stores() -> None:
    assert quick.STORE_PARTS == store_mod.STORE_PARTS
    assert memo.READ_FILES == (store_mod.STATE_FILE, receipt_mod.RECEIPT_FILE)


def test_an_untracked_file_made_executable_is_not_the_kept_target(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "docs" / "run.sh").write_text("echo reviewed\n")
    approve(repo, tmp_path)
    assert _full(repo, "pre-commit")["allowed"] is True
    assert livememo.restore(discover(repo)) is not None
    assert _quick(repo, "pre-commit") is not None  # the negative control
    os.chmod(repo / "docs" / "run.sh", 0o755)  # git status shows '? docs/run.sh' as before
    assert _quick(repo, "pre-commit") is None
    assert code(gate(repo, "pre-commit")) == "receipt-discovery/scope-changed"


def test_an_attributes_file_outside_the_worktree_is_part_of_the_witness(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    kept = livememo.restore(discover(repo))
    assert kept is not None and kept.fast is not None
    info = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    info = (repo / info if not info.is_absolute() else info) / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("*.md text eol=crlf\n")
    derived = quick.derive(discover(repo), GateRequest(gate="pre-commit"), kept)
    assert derived.fast is not kept.fast  # not reused: derived again (or stepped aside)


def test_a_kept_target_of_another_checkout_or_edited_is_not_restored(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    wt = discover(repo)
    path = wt.git_dir / "factory" / "gate-live.json"
    doc = json.loads(path.read_bytes())
    doc["body"]["candidate_tree"] = "0" * 40  # the digest no longer matches
    path.write_text(json.dumps(doc))
    assert livememo.restore(wt) is None
    _full(repo, "pre-commit")
    other = git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "HEAD")
    del other
    linked = discover(tmp_path / "linked")
    os.makedirs(linked.git_dir / "factory", exist_ok=True)
    (linked.git_dir / "factory" / "gate-live.json").write_bytes(path.read_bytes())
    assert livememo.restore(linked) is None  # recorded for another root


def test_a_change_between_the_passes_falls_back_to_the_full_path(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    _quick(repo, "pre-commit")  # keeps the target
    seen: list[str] = []

    def race(point: str) -> None:
        seen.append(point)
        (repo / "docs" / "guide.md").write_text("# guide\n\nraced\n")

    monkeypatch.setattr(quick, "between_hook", race)
    assert _quick(repo, "pre-commit") is None and seen == ["decided"]
    assert not gate(repo, "pre-commit").allowed


def test_the_hook_path_builds_no_model(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    _full(repo, "pre-commit")
    probe = (
        "import sys\n"
        "from factory.cli.main import main\n"
        "code = main(['review', 'validate', '--gate', 'pre-commit'])\n"
        "assert code == 0, code\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core'))\n"
        "stand_in = sys.modules.pop('pydantic.plugin._loader')\n"  # factory's, not pydantic
        "assert stand_in.__doc__.startswith('factory:')\n"
        "bad.remove('pydantic.plugin._loader')\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"replayed from the gate memo" in proc.stderr


def test_a_push_right_after_committing_the_reviewed_tree_takes_the_hook_path(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    assert _full(repo, "pre-commit")["allowed"] is True  # the commit's gate wrote the memo
    _commit(repo)
    fast = _quick(repo, "pre-push")
    assert fast is not None and fast == _full(repo, "pre-push")


def _remote(repo: Path, tmp: Path, *, push: bool) -> None:
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    if push:
        git(repo, "push", "-q", "origin", "main")


@pytest.mark.parametrize("published", [True, False], ids=["remote-has-base", "remote-empty"])
def test_a_push_to_a_remote_asks_the_remote_live_in_each_pass(
    repo: Path, tmp_path: Path, published: bool
) -> None:
    _remote(repo, tmp_path, push=published)
    _approved(repo, tmp_path)
    _commit(repo)
    assert _full(repo, "pre-push")["allowed"] is True  # without --remote: writes the memo
    assert memo.load(store_root(repo)) is not None
    req = GateRequest(gate="pre-push", remote="origin")
    full = validate(repo, req)
    assert full.allowed is published  # an empty remote: the old history is unreviewed
    if published:
        assert quick.replayed_allow(repo, req) == full.to_json_value()
        git(repo, "remote", "set-url", "origin", str(tmp_path / "elsewhere.git"))
    assert quick.replayed_allow(repo, req) is None  # a denial (or a remote it cannot ask)
