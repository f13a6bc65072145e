"""Each representation state is a distinct line on the terminal view and on the HTML page
(issue 22), read back from the real CLI and from headless Chromium's DOM."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.creating_helpers import Created, completed
from tests.support.browser import dump_dom
from tests.support.cli import run_factory
from tests.support.git import git


def _committed(run: Created) -> None:
    git(run.wt, "commit", "-q", "-am", "take it")


def _committed_then_edited(run: Created) -> None:
    _committed(run)
    (run.wt / "later.txt").write_text("later\n")


def _edited(run: Created) -> None:
    (run.wt / "stray.txt").write_text("not judged\n")


def _gone(run: Created) -> None:
    shutil.rmtree(run.wt)


CASES: list[tuple[str, Callable[[Created], None], int, str, list[str]]] = [
    (
        "uncommitted",
        lambda run: None,
        0,
        "uncommitted in the worktree (HEAD is still the base)",
        [],
    ),
    ("committed", _committed, 0, "committed as {head}: HEAD's tree is the judged candidate", []),
    (
        "committed-then-changed",
        _committed_then_edited,
        0,
        "committed as {head}, then changed: the receipt's claims stand for that commit",
        ["changed since:", "later.txt"],
    ),
    ("worktree-gone", _gone, 0, "the worktree is gone: verified from the evidence alone", []),
    (
        "mismatch",
        _edited,
        4,
        "MISMATCH: the worktree holds neither the judged candidate nor a commit of it",
        ["differing paths:", "stray.txt"],
    ),
]


def _text(dom: str, element_id: str) -> str:
    found = re.search(rf'<div[^>]*id="{element_id}"[^>]*>(.*?)<h1', dom, re.S)
    assert found, dom[:3000]
    return re.sub(r"<[^>]+>", " ", found.group(1))


@pytest.mark.parametrize(
    ("state", "make", "code", "sentence", "paths"), CASES, ids=[c[0] for c in CASES]
)
def test_each_state_is_its_own_line_on_the_terminal_and_the_page(
    tmp_path: Path,
    state: str,
    make: Callable[[Created], None],
    code: int,
    sentence: str,
    paths: list[str],
) -> None:
    run = completed(tmp_path)
    make(run)
    head = git(run.repo, "rev-parse", f"refs/heads/{run.branch}").strip()[:12]
    sentence = sentence.format(head=head)
    page = tmp_path / "receipt.html"
    proc = run_factory(["receipt", "show", str(run.receipt), "--html", str(page)])
    assert proc.returncode == code, proc.stderr
    out = proc.stdout.decode()
    line = next(ln for ln in out.splitlines() if ln.startswith("where the change is"))
    assert sentence in " ".join(out.split())  # rich may wrap the long sentence
    assert line.startswith("where the change is  " + sentence[:30])
    for expected in paths:
        assert any(ln.strip() == expected for ln in out.splitlines()), out

    dom = dump_dom(page, tmp_path / "profile")
    assert f'class="banner representation rep-{state}"' in dom
    words = " ".join(_text(dom, "representation").split())
    assert "Where the change is:" in words and sentence in words
    for expected in paths:
        assert expected in words
    # The page's verification banner agrees with the exit code.
    assert ("VERIFICATION FAILED" in dom) == (code != 0)


def test_a_receipt_without_a_candidate_has_no_representation_line(tmp_path: Path) -> None:
    from tests.agent.fakes import Step

    run = Created(tmp_path, [Step()], [])  # the worker changed nothing: failed, no candidate
    proc = run_factory(["receipt", "show", str(run.receipt)])
    assert proc.returncode == 0
    assert b"where the change is" not in proc.stdout
