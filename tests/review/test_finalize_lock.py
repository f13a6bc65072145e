"""One finalize call takes the store lock once for its whole commit chain (however many
transitions its inputs allow), so no other writer can interleave between its steps; the
lock's owner metadata is still written for busy messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.review import lock as lock_mod
from factory.review.finalize import FinalizeArgs, finalize
from factory.review.lock import StoreLock
from factory.review.service import open_context
from tests.review.cli_helpers import edit_parser, store_root
from tests.review.gates_support import begin, clean_result, finish


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = StoreLock.__enter__

    def enter(self: StoreLock) -> StoreLock:
        seen.append(self.command)
        return real(self)

    monkeypatch.setattr(lock_mod.StoreLock, "__enter__", enter)
    return seen


def _results_only(repo: Path, tmp: Path, docs: list[dict[str, object]]) -> None:
    files = [tmp / f"only-{i}.json" for i in range(len(docs))]
    for path, doc in zip(files, docs, strict=True):
        path.write_text(json.dumps(doc))
    view, _ = finalize(open_context(repo), FinalizeArgs(results=tuple(files)))
    assert view["state"] == "validating"


@pytest.mark.parametrize("with_results", [True, False], ids=["many-steps", "one-step"])
def test_the_commit_chain_takes_the_lock_once(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_results: bool
) -> None:
    edit_parser(repo)
    results = [clean_result() for _ in begin(repo)["lenses"]]
    if not with_results:  # the twin: results recorded first, then the evidence alone
        _results_only(repo, tmp_path, results)
        results = []
    seen = _counting(monkeypatch)
    view = finish(repo, tmp_path, results=results)
    assert view["state"] == "approved"
    assert len(view["applied"]) == (len(results) + 2 if with_results else 1)
    assert seen.count("review/finalize") == 1
    meta = json.loads((store_root(repo) / "LOCK").read_text())
    assert meta["schema"] == "factory.review-store-lock/1" and meta["command"]
