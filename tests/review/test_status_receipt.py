"""An approved lineage whose receipt file is missing (issue 23 §2): ``status`` names the
``finalize`` that rewrites it — not the gates, which deny until it is back — and following
it restores the receipt and the gates. The twin: with its receipt, status names the gates."""

from __future__ import annotations

from pathlib import Path

from factory.review.receipt import RECEIPT_FILE
from tests.review.cli_helpers import review, store_root
from tests.review.gates_support import approve

GATE = "factory review validate --gate pre-commit"


def _approved(repo: Path, tmp: Path) -> str:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    return str(approve(repo, tmp)["lineage"])


def test_status_names_the_finalize_that_rewrites_a_missing_receipt(
    repo: Path, tmp_path: Path
) -> None:
    lid = _approved(repo, tmp_path)
    receipt = store_root(repo) / lid / RECEIPT_FILE
    data = receipt.read_bytes()
    receipt.unlink()
    status = review("status", cwd=repo)
    assert status.code == 0
    entry = status.doc["lineages"][0]
    rewrite = f"factory review finalize --lineage {lid}"
    assert entry["receipt"] == "missing"
    assert entry["next"] == [rewrite, f"factory review show --lineage {lid}"]
    assert status.doc["next"] == [rewrite]
    denied = review("validate", "--gate", "pre-commit", "--json", cwd=repo)
    assert denied.code == 3 and denied.doc["context"]["next"] == [rewrite]
    ran = review(*rewrite.split()[2:], cwd=repo)  # follow it, as printed
    assert ran.code == 0 and ran.doc["next"][0] == GATE
    assert receipt.read_bytes() == data  # the same derivation, byte for byte
    assert review("validate", "--gate", "pre-commit", cwd=repo).code == 0


def test_twin_with_its_receipt_status_names_the_gates(repo: Path, tmp_path: Path) -> None:
    lid = _approved(repo, tmp_path)
    status = review("status", cwd=repo)
    entry = status.doc["lineages"][0]
    assert entry["receipt"] == "ok" and entry["next"][0] == GATE
    assert f"factory review finalize --lineage {lid}" not in entry["next"]
    assert status.doc["next"] == [GATE]  # never an empty next (issue 23)
