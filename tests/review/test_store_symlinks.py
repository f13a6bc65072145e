"""A symbolic link where the store, a lineage folder or its ``evidence/`` folder belongs is
refused with a typed error (exit 4) and never followed on write (issue 23 §4): the link's
target keeps its bytes, the gates fail closed, and ``next`` names the way out. The twins:
the same commands on real folders work."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from factory.review.incident import preserve, replayable
from factory.review.receipt import RECEIPT_FILE
from factory.review.service import open_context
from tests.review.cli_helpers import Ran, edit_parser, review, store_root
from tests.review.gates_support import approve, begin


def _approved(repo: Path, tmp: Path) -> str:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    return str(approve(repo, tmp)["lineage"])


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _link_away(path: Path, target: Path) -> Path:
    """Move the real folder to ``target`` and leave a link to it at ``path``."""
    shutil.move(str(path), str(target))
    path.symlink_to(target, target_is_directory=True)
    return target


def _refused(ran: Ran, code: str) -> list[str]:
    assert ran.code == 4, (ran.code, ran.stderr)
    assert "Traceback" not in ran.stderr and f"factory: {code}:" in ran.stderr
    if ran.doc is None:
        return []
    assert ran.doc["error"]["code"] == code
    return list(ran.doc["next"])


def _evidence(tmp: Path) -> Path:
    path = tmp / "evidence.txt"
    path.write_bytes(b"suite: 12 passed\n")
    return path


def test_a_linked_store_is_refused_and_never_written_through(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    real = _link_away(store_root(repo), tmp_path / "real-store")
    before = _files(real)
    nxt = _refused(review("status", cwd=repo), "review-store-symlink")
    _refused(review("start", cwd=repo), "review-store-symlink")
    _refused(review("validate", "--gate", "pre-commit", cwd=repo), "review-store-symlink")
    assert _files(real) == before  # no record, lock or memo written through the link
    assert nxt[0].startswith("mv ")
    subprocess.run(shlex.split(nxt[0]), check=True)  # follow it, as printed
    status = review("status", cwd=repo)
    assert status.code == 0 and status.doc["lineages"] == []  # its authority is not ours


def test_a_linked_lineage_folder_is_refused_and_never_written_through(
    repo: Path, tmp_path: Path
) -> None:
    lid = _approved(repo, tmp_path)
    assert review("validate", "--gate", "pre-commit", cwd=repo).code == 0  # memo written
    real = _link_away(store_root(repo) / lid, tmp_path / "real-lineage")
    gate = review("validate", "--gate", "pre-commit", "--json", cwd=repo)
    assert gate.code == 3, gate.stderr  # the memo of the real folder is not replayed
    (real / RECEIPT_FILE).unlink()  # finalize would write the receipt into the link
    before = _files(real)
    nxt = _refused(review("finalize", "--lineage", lid, cwd=repo), "review-lineage-symlink")
    assert nxt[0].startswith(f"factory review repair --lineage {lid} --class invalid-record")
    assert _files(real) == before
    gate = review("validate", "--gate", "pre-commit", "--json", cwd=repo)
    assert gate.code == 3 and gate.doc["denial"]["code"] == "authority-corrupted"
    status = review("status", cwd=repo).doc
    assert status["lineages"][0]["corrupt"]["code"] == "review-lineage-symlink"
    assert status["next"] == [nxt[0]]


def test_a_linked_evidence_folder_is_refused_and_never_written_through(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    lid = str(begin(repo)["lineage"])
    real = _link_away(store_root(repo) / lid / "evidence", tmp_path / "real-evidence")
    before = _files(real)
    ran = review("finalize", "--lineage", lid, "--evidence", str(_evidence(tmp_path)), cwd=repo)
    nxt = _refused(ran, "review-lineage-symlink")
    assert nxt[0].startswith(f"factory review repair --lineage {lid} --class invalid-record")
    assert _files(real) == before  # the final evidence blob was not written through it


def test_twin_real_folders_work(repo: Path, tmp_path: Path) -> None:
    lid = _approved(repo, tmp_path)
    (store_root(repo) / lid / RECEIPT_FILE).unlink()
    assert review("status", cwd=repo).code == 0
    assert review("finalize", "--lineage", lid, cwd=repo).code == 0  # receipt rewritten
    assert (store_root(repo) / lid / RECEIPT_FILE).is_file()
    assert review("validate", "--gate", "pre-commit", cwd=repo).code == 0
    (repo / "docs" / "guide.md").write_text("# guide\n\nother words\n")
    fresh = review("start", cwd=repo).doc["lineage"]
    ran = review("finalize", "--lineage", fresh, "--evidence", str(_evidence(tmp_path)), cwd=repo)
    assert ran.code == 0 and ran.doc["state"] == "approved"
    assert any(
        p.name.startswith("final-evidence-")
        for p in (store_root(repo) / fresh / "evidence").iterdir()
    )


def test_a_linked_incidents_folder_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    """Beyond the three: a preserved lens answer goes to the fallback folder instead."""
    edit_parser(repo)
    lid = str(begin(repo)["lineage"])
    store = open_context(repo).store
    state = store.load(lid).state
    real = tmp_path / "real-incidents"
    real.mkdir()
    (store_root(repo) / lid / "incidents").symlink_to(real, target_is_directory=True)
    kept = preserve(
        store, state, state.lenses[0], b'{"findings": []}', reason_code="t", reason="t",
        route="rehearsal", cli_version="t", fallback=tmp_path / "fallback",
    )  # fmt: skip
    assert kept.parent == tmp_path / "fallback" and list(real.iterdir()) == []
    assert replayable(store, state, state.lenses[0]) is None
