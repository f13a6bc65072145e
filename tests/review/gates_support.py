"""In-process review flows for gate tests: start, finalize to approved or escalated, gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factory.review.finalize import FinalizeArgs, finalize
from factory.review.gates.live import GateRequest
from factory.review.gates.result import GateResult
from factory.review.gates.validate import validate
from factory.review.service import open_context, start
from factory.review.store import Loaded
from tests.support.git import git


def begin(repo: Path) -> dict[str, Any]:
    return start(repo, base_ref=None, focus=None, policy_path=None)


def finish(
    repo: Path,
    tmp: Path,
    *,
    results: list[dict[str, Any]] | None = None,
    evidence: bytes = b"suite: 12 passed\n",
    failed: bool = False,
    lineage: str | None = None,
) -> dict[str, Any]:
    """Finalize the open lineage with lens results (one file each) and evidence."""
    files = []
    for i, doc in enumerate(results or []):
        path = tmp / f"result-{i}-{len(list(tmp.iterdir()))}.json"
        path.write_text(json.dumps(doc))
        files.append(path)
    ev = tmp / f"evidence-{len(list(tmp.iterdir()))}.txt"
    ev.write_bytes(evidence)
    args = FinalizeArgs(lineage=lineage, results=tuple(files), evidence=str(ev), failed=failed)
    view, _ = finalize(open_context(repo), args)
    return view


def approve(repo: Path, tmp: Path, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """start + finalize to approved (a docs-only change needs no lens result)."""
    started = begin(repo)
    lenses = [lens["lens"] for lens in started["lenses"]]
    docs = results if results is not None else [clean_result() for _ in lenses]
    view = finish(repo, tmp, results=docs)
    assert view["state"] == "approved", view
    return view


def clean_result() -> dict[str, Any]:
    return {"findings": [], "evidence": ["read the whole candidate diff"]}


def gate(repo: Path, name: str, **kw: Any) -> GateResult:
    return validate(repo, GateRequest(gate=name, **kw))  # type: ignore[arg-type]


def code(result: GateResult) -> str | None:
    return None if result.denial is None else f"{result.denial.stage}/{result.denial.code}"


def commit(repo: Path, message: str = "deliver", *extra: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, *extra)
    return git(repo, "rev-parse", "HEAD").strip()


def loaded(repo: Path, lineage: str) -> Loaded:
    return open_context(repo).store.load(lineage)
