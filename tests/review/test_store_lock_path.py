"""Something other than a file where the store's ``LOCK`` belongs (issue 23 §3): a folder
(or a link, never followed) is ``review-store-lock-not-file``, exit 4 with the command that
clears it in ``next`` — never exit 1 or a traceback. The twin: with the folder moved aside
as named, the same commands work again."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.review.cli_helpers import Ran, review, store_root
from tests.review.gates_support import approve

CODE = "review-store-lock-not-file"


def _approved(repo: Path, tmp: Path) -> str:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    return str(approve(repo, tmp)["lineage"])


def _refused(ran: Ran) -> list[str]:
    assert ran.code == 4, (ran.code, ran.stderr)
    assert "Traceback" not in ran.stderr and f"factory: {CODE}:" in ran.stderr
    return list(ran.doc["next"]) if ran.doc is not None else []


def test_a_folder_at_the_lock_path_is_a_typed_failure_with_a_way_out(
    repo: Path, tmp_path: Path
) -> None:
    lid = _approved(repo, tmp_path)
    lock = store_root(repo) / "LOCK"
    lock.unlink()
    lock.mkdir()
    (lock / "kept").write_bytes(b"someone's bytes")
    start = review("start", cwd=repo)
    nxt = _refused(start)
    assert start.doc["error"]["code"] == CODE and nxt[0].startswith("mv ")
    _refused(review("finalize", "--lineage", lid, cwd=repo))
    _refused(review("repair", "--lineage", lid, "--class", "invalid-record", "--reason", "r",
                    "--actor", "a", cwd=repo))  # fmt: skip
    gate = review("validate", "--gate", "pre-commit", cwd=repo)
    _refused(gate)  # the gate's allow takes the lock: no allow without it
    assert (lock / "kept").read_bytes() == b"someone's bytes"
    subprocess.run(shlex.split(nxt[0]), check=True)  # follow it, as printed
    assert review("validate", "--gate", "pre-commit", cwd=repo).code == 0
    assert review("start", cwd=repo).code == 0
    assert lock.is_file()


def test_a_link_at_the_lock_path_is_refused_and_never_followed(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    lock = store_root(repo) / "LOCK"
    lock.unlink()
    target = tmp_path / "elsewhere"
    lock.symlink_to(target)
    nxt = _refused(review("start", cwd=repo))
    assert not target.exists()  # nothing created or written through the link
    assert nxt[0].startswith("mv ")


def test_twin_a_lock_file_works(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    assert (store_root(repo) / "LOCK").is_file()
    ran = review("start", cwd=repo)
    assert ran.code == 0 and ran.doc["action"] == "resumed"
    assert review("validate", "--gate", "pre-commit", cwd=repo).code == 0
