"""``agent-receipt``: a receipt checked with the project's own verifier.

Argument: ``receipt`` (its path). :func:`factory.agent.verify.verify` re-hashes its
evidence, checks its revision and canonical bytes and re-derives the candidate when the
worktree still exists. A receipt that fails those checks is a forged witness (an integrity
failure), never a false or an unknown; a worktree that has moved on since is observed as
``still_matches: false``, not as forgery. The observation is ``{status, verdict, route,
execution, candidate_identity, candidate_tree, base_commit, still_matches}``; the scope is
the final candidate's tree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from factory.agent.receipt_once import Reader, VerifiedReceipt, read_and_verify
from factory.agent.verify import ReceiptInvalid
from factory.errors import FactoryError, UsageError
from factory.gate.providers import Observed, integrity, operational


def make(reader: Reader = read_and_verify) -> Callable[[Mapping[str, Any]], Awaitable[Observed]]:
    """The provider over ``reader`` (a command that already verified the receipt passes
    :func:`factory.agent.receipt_once.pinned`: one read and one verification per command)."""

    async def acquire(args: Mapping[str, Any]) -> Observed:
        try:
            held = reader(Path(args["receipt"]))
        except UsageError:
            return operational("provider-unavailable", "the receipt does not exist")
        except ReceiptInvalid as exc:
            return operational("observation-unparsable", exc.fact)
        except FactoryError as exc:
            return operational(
                "provider-crashed", f"the receipt could not be verified ({exc.code})"
            )
        return observe(held)

    return acquire


def observe(held: VerifiedReceipt) -> Observed:
    """The observation of a receipt read and verified once (the value judged is the value
    verified: nothing can change between the two)."""
    report, receipt = held.report_json(), held.loaded.receipt
    if _forged(report):
        return integrity("witness-forged", "the receipt does not verify (factory receipt verify)")
    cand = receipt.final_candidate()
    document = {
        "status": receipt.status,
        "verdict": receipt.verdict,
        "route": receipt.route,
        "execution": receipt.execution,
        "candidate_identity": None if cand is None else cand.identity,
        "candidate_tree": None if cand is None else cand.body.candidate_tree,
        "base_commit": None if cand is None else cand.body.base_commit,
        "still_matches": report["candidate"].get("still_matches"),
    }
    tree = document["candidate_tree"]
    return Observed(document, scope_kind="tree" if tree else "none", scope_value=tree)


acquire = make()


def _forged(report: dict[str, Any]) -> bool:
    """The receipt's own bytes fail verification. A worktree that moved on since (the
    candidate no longer matches) or a run still going is not forgery: it is observed, as
    ``still_matches`` and ``status``."""
    return not (
        report["revision"]["ok"]
        and report["canonical_bytes"]
        and not report["consistency_problems"]
        and all(e["ok"] for e in report["evidence"])
    )
