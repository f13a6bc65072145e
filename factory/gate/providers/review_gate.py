"""``review-gate``: the review check's result at a git boundary, as evidence (issue 13).

Arguments: ``gate`` (pre-commit, pre-push, pre-pr or release) and ``repo`` (where the
review transaction lives). The evidence source calls an injected *runner* that returns the
typed :class:`~factory.review.gates.result.GateResult` (``factory.review-gate-result/1``);
the default runner calls the review service in-process
(:func:`factory.review.service.review_check`, what ``factory review validate --gate G``
prints) in a worker thread — no child process, no stdout parsed (issue 25). The model
holds the document's contract: exactly the seven fields, ``result`` one of allow,
scope-changed, invalidated, escalated, ``action`` fixed by ``result``, ``denial`` null
or ``{stage, code}``. A typed failure of the review check is an operational failure
(``provider-refused``), never an allow.

The scope is the tree the check derived as its live target (``context.live.candidate_tree``)
when the result names one — so a policy can demand that the review allowed *this*
candidate tree — and the repository folder otherwise. The result's canonical bytes are
kept as the ``review-gate-result`` artefact (content-addressed), which is where the
pipeline finds the review receipt the gate relied on (``context.receipt``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from factory.errors import FactoryError
from factory.gate.providers import Observed, operational

if TYPE_CHECKING:
    from factory.review.gates.result import GateResult
    from factory.review.gates.verdict import GateName

RESULT_SCHEMA = "factory.review-gate-result/1"
RESULTS = ("allow", "scope-changed", "invalidated", "escalated")
GATES: tuple[GateName, ...] = ("pre-commit", "pre-push", "pre-pr", "release")
Runner = Callable[["GateName", Path], Awaitable["GateResult"]]


async def default_runner(gate: GateName, repo: Path) -> GateResult:
    """The review check at ``gate`` in ``repo``, in-process (in a worker thread: it
    reads git and takes the review store's lock)."""
    from factory.review.service import review_check

    return await trio.to_thread.run_sync(partial(review_check, repo, gate))


def live_tree(result: GateResult) -> str | None:
    """``context.live.candidate_tree`` when the result names one."""
    live = result.context.live
    return None if live is None or not live.candidate_tree else live.candidate_tree


def make(runner: Runner = default_runner) -> Callable[[Mapping[str, Any]], Awaitable[Observed]]:
    async def acquire(args: Mapping[str, Any]) -> Observed:
        repo, gate = Path(args["repo"]), str(args["gate"])
        if gate not in GATES:
            return operational("provider-refused", f"{gate[:40]!r} is not a review check gate")
        try:
            result = await runner(gate, repo)
        except FactoryError as exc:
            return operational("provider-refused", f"the review check refused: {exc.message}")
        except OSError as exc:
            return operational(
                "provider-unavailable", f"the review check could not run ({exc.strerror})"
            )
        artefacts = (("review-gate-result", result.canonical()),)
        doc = result.to_json_value()
        tree = live_tree(result)
        if tree is not None:
            return Observed(doc, scope_kind="tree", scope_value=tree, artefacts=artefacts)
        return Observed(
            doc,
            scope_kind="repository",
            scope_value=os.fspath(repo.resolve()),
            artefacts=artefacts,
        )

    return acquire
