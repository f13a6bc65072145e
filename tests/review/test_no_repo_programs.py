"""Review start, lens preflight and finalize run no program the repository names
(filters, textconv, diff drivers, fsmonitor, hooks); each plant's twin shows it is live."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.gitio import plant
from tests.review.conftest import BASE_FILES, edit_parser, review, reviewer_doc, write_json
from tests.support.git import init_repo


def blob(repo: Path, tree: str, path: str) -> bytes:
    """The exact bytes of ``tree:path`` (no newline translation)."""
    return subprocess.run(
        ["git", "cat-file", "blob", f"{tree}:{path}"], cwd=repo, capture_output=True, check=True
    ).stdout


@pytest.mark.parametrize("program", list(plant.PROGRAMS))
def test_review_runs_no_repository_program(tmp_path: Path, program: str) -> None:
    repo = init_repo(tmp_path / "repo", {**BASE_FILES, ".gitattributes": plant.ATTRIBUTES})
    markers = tmp_path / "markers"
    markers.mkdir()
    plant.PROGRAMS[program](repo, markers)
    edit_parser(repo)
    (repo / "new.txt").write_text("raw bytes\r\n")
    started = review("start", "--cwd", str(repo), cwd=repo)
    assert started.code == 0, started.stderr
    result = write_json(tmp_path / "r.json", reviewer_doc())
    done = review(
        "finalize",
        "--cwd",
        str(repo),
        "--result",
        str(result),
        "--evidence",
        "-",
        input=b"checked\n",
        cwd=repo,
    )
    assert done.code == 0, done.stderr
    assert list(markers.iterdir()) == [], f"{program} ran under factory review"
    tree = started.doc["target"]["candidate_tree"]
    assert blob(repo, tree, "new.txt") == b"raw bytes\r\n"  # the bytes on disk, unconverted
    plant.TRIGGERS[program](repo)  # the twin: plain git does run it
    assert plant.marker(markers, program).exists()


def test_the_candidate_binds_raw_bytes_even_when_git_would_convert_them(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {**BASE_FILES, ".gitattributes": "*.txt text eol=lf\n"})
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    started = review("start", "--cwd", str(repo), cwd=repo)
    tree = started.doc["target"]["candidate_tree"]
    assert blob(repo, tree, "crlf.txt") == b"one\r\ntwo\r\n"
    assert json.loads(started.stdout)["counts"]["changed_files"] == 1
