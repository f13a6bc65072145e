"""The gate's hook path equals its full path on generated repositories and stores (issue 25).

Each example builds a small real repository and drives it through a random sequence of
steps: files written, deleted or made executable, staged, committed, approved by a real
start + finalize, records damaged (a state flipped, a receipt removed or torn, a lineage
folder added, the memo torn) and gates run (which warm the gate memo and the kept
pre-commit target). At every gate step and at the end, the answer through the hook path
(memo and kept target allowed) must equal a full validation of the same bytes, field for
field: result, allowed, reason, denial and the legal next commands — and, where the hook
path answered from the memo, the whole document.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factory.errors import FactoryError
from factory.review.gates.live import GateRequest
from factory.review.gates.validate import check
from tests.review.cli_helpers import BASE_FILES, store_root
from tests.review.gates_support import approve, commit
from tests.support.git import git, init_repo

FILES = ("docs/guide.md", "docs/notes.md", "README.md", "src/tool.sh")
WORDS = ("alpha\n", "beta\n", "gamma\r\n", "")

Step = tuple[str, Any, Any]

steps = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES), st.sampled_from(WORDS)),
    st.tuples(st.just("delete"), st.sampled_from(FILES), st.none()),
    st.tuples(st.just("chmod"), st.sampled_from(FILES), st.none()),
    st.tuples(st.just("stage"), st.none(), st.none()),
    st.tuples(st.just("commit"), st.none(), st.none()),
    st.tuples(st.just("approve"), st.sampled_from(FILES), st.sampled_from(WORDS)),
    st.tuples(st.just("approve"), st.sampled_from(FILES), st.sampled_from(WORDS)),
    st.tuples(st.just("gate"), st.sampled_from(("pre-commit", "pre-push")), st.none()),
    st.tuples(
        st.just("damage"),
        st.sampled_from(("flip-state", "drop-receipt", "tear-receipt", "new-folder", "memo")),
        st.none(),
    ),
)


def _full(repo: Path, gate: str) -> dict[str, Any]:
    return check(repo, GateRequest(gate=gate), use_memo=False).doc  # type: ignore[arg-type]


def _hook(repo: Path, gate: str) -> tuple[dict[str, Any], bool]:
    """The hook path's answer and whether it came from the memo (else the full path)."""
    answer = check(repo, GateRequest(gate=gate))  # type: ignore[arg-type]
    return answer.doc, answer.replayed


def _fields(doc: dict[str, Any]) -> tuple[object, ...]:
    return (
        doc["result"],
        doc["allowed"],
        doc["reason"],
        doc["denial"],
        doc["context"]["next"],
    )


def _check(repo: Path, gate: str, hits: list[str]) -> None:
    full = _full(repo, gate)
    hook, from_memo = _hook(repo, gate)
    assert _fields(hook) == _fields(full)
    if from_memo:
        hits.append(gate)
        assert hook == full
    assert _fields(_full(repo, gate)) == _fields(full)  # the full path is repeatable


def _lineages(repo: Path) -> list[Path]:
    root = store_root(repo)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("review-"))


def _damage(repo: Path, how: str) -> None:
    root = store_root(repo)
    if how == "new-folder":
        (root / "review-0000000000000000").mkdir(parents=True, exist_ok=True)
        return
    if how == "memo":
        if root.is_dir():
            (root / "gate-memo.json").write_bytes(b'{"schema": "factory.review-gate-memo/1"')
        return
    found = _lineages(repo)
    if not found:
        return
    state, receipt = found[-1] / "review-state.json", found[-1] / "review-receipt.json"
    if how == "flip-state" and state.exists():
        state.write_bytes(state.read_bytes().replace(b'"approved"', b'"reviewing"', 1))
    elif how == "drop-receipt" and receipt.exists():
        receipt.unlink()
    elif how == "tear-receipt" and receipt.exists():
        receipt.write_bytes(receipt.read_bytes()[:40])


def _apply(repo: Path, tmp: Path, step: Step, hits: list[str]) -> None:
    kind, arg, extra = step
    if kind == "write":
        path = repo / arg
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(extra)
    elif kind == "delete":
        (repo / arg).unlink(missing_ok=True)
    elif kind == "chmod" and (repo / arg).exists():
        os.chmod(repo / arg, (repo / arg).stat().st_mode ^ 0o100)
    elif kind == "stage":
        git(repo, "add", "-A")
    elif kind == "commit":
        git(repo, "add", "-A")
        if git(repo, "status", "--porcelain"):
            commit(repo)
    elif kind == "approve":
        path = repo / arg
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"reviewed {extra}")  # a change to review (unless already there)
        # nothing to review, or a lineage already open: the store stays as it is
        with contextlib.suppress(FactoryError, AssertionError):
            approve(repo, tmp)
    elif kind == "gate":
        _check(repo, arg, hits)
    elif kind == "damage":
        _damage(repo, arg)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(steps, min_size=1, max_size=7))
def test_the_hook_path_answers_what_the_full_path_answers(plan: list[Step]) -> None:
    with tempfile.TemporaryDirectory(prefix="factory-fastprop-") as tmp:
        base = Path(tmp)
        repo = init_repo(base / "repo", dict(BASE_FILES))
        work = base / "work"
        work.mkdir()
        hits: list[str] = []
        for step in plan:
            _apply(repo, work, step, hits)
        for gate in ("pre-commit", "pre-push"):
            _check(repo, gate, hits)


def test_the_property_reaches_the_memo(tmp_path: Path) -> None:
    """The control: on an approved, untouched checkout the hook path does answer from the
    memo (so the property above compares two paths, not the full path with itself)."""
    repo = init_repo(tmp_path / "repo", dict(BASE_FILES))
    (tmp_path / "work").mkdir()
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path / "work")
    hits: list[str] = []
    _check(repo, "pre-commit", hits)
    _check(repo, "pre-commit", hits)
    assert hits == ["pre-commit", "pre-commit"]
    # The same entry point in a new process answers from the memo without pydantic.
    assert _probe(repo, "pre-commit") == "replayed"
    # Negative control: an edit after the review falls through to the full path.
    (repo / "docs" / "guide.md").write_text("# guide\n\nedited after the review\n")
    assert _probe(repo, "pre-commit") == "full"


PROBE = """
import sys
from pathlib import Path
from factory.review.gates.live import GateRequest
from factory.review.gates.validate import check
answer = check(Path(sys.argv[1]), GateRequest(gate=sys.argv[2]))
loaded = any(m.split(".")[0] == "pydantic" for m in sys.modules)
assert answer.replayed != loaded, (answer.replayed, loaded)
print("replayed" if answer.replayed else "full")
"""


def _probe(repo: Path, gate: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo), gate], capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc.stdout.decode().strip()
