"""How one attempt ended, decided from its receipt alone (pure but for reading it).

``done``: the receipt verifies (with the receipt verifier) and is terminal: the task's
outcome is the receipt's status. ``refused``: the agent refused before anything ran (exit 2,
no receipt): not rerun, it would be refused again. ``unverified``: no receipt, or one that
does not verify: rerun on resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Judged:
    state: str  # done | refused | unverified
    outcome: str  # completed | rejected | failed | interrupted | refused
    revision: str | None
    error: str | None
    worktree: str | None = None
    branch: str | None = None


def judge(receipt: Path, exit_code: int | None, said: str | None = None) -> Judged:
    from factory.agent.verify import failed_checks, load_receipt, verify
    from factory.errors import FactoryError

    if not receipt.exists():
        if exit_code == 2:
            why = said or "factory agent refused the task (exit 2)"
            return Judged("refused", "refused", None, why)
        return Judged("unverified", "failed", None, said or f"no receipt (exit {exit_code})")
    try:
        report = verify(receipt)
        parsed, _ = load_receipt(receipt)
    except FactoryError as exc:
        return Judged("unverified", "failed", None, f"{exc.code}: {exc.fact}")
    creation = parsed.worktree_creation
    where = (creation.path, creation.branch) if creation is not None else (None, None)
    if not report.ok:
        why = "; ".join(failed_checks(report)) or "does not verify"
        return Judged("unverified", "failed", parsed.revision, f"receipt: {why}", *where)
    error = f"{parsed.error.code}: {parsed.error.message}" if parsed.error else None
    state = "interrupted" if parsed.status == "interrupted" else "done"  # rerun on resume
    return Judged(state, parsed.status, parsed.revision, error, *where)
