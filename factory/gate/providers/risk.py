"""``candidate-risk``: the review risk tier of an agent receipt's candidate, and the lenses
it selects (SPEC R's classification, computed by the review subsystem's own pure rules).

Argument: ``receipt`` (an agent receipt's path). The provider reads the receipt's final
candidate (base tree → candidate tree), asks git for the changed paths with their modes
and line counts (``diff-tree --raw --numstat`` between the two trees, in the receipt's
worktree, no conversion or external program), and classifies them with
:func:`factory.review.risk.classify` and :func:`factory.review.risk.select_lenses` under
the default review policy (its golden globs) and the default focus lens — exactly what
``factory review start`` freezes for the same candidate against the same base.

The observation is ``{level, reasons, lenses, lens_count, changed_lines}``; the scope is
the candidate tree. The receipt's own integrity is the ``agent-receipt`` provider's job; a
receipt that does not even parse is an operational failure here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from factory.agent.verify import LoadedReceipt, read_receipt
from factory.errors import FactoryError
from factory.gate.providers import Observed, operational
from factory.gitio.difftree import tree_changes
from factory.review.names import LensName
from factory.review.policy import default_policy
from factory.review.risk import ChangedPath, classify, select_lenses

ProviderFn = Callable[[Mapping[str, Any]], Awaitable[Observed]]

DEFAULT_FOCUS: LensName = "reliability"


def changed_paths(root: Path, base: str, cand: str) -> list[ChangedPath]:
    """Every path that differs between two trees, with modes and numstat line counts."""
    policy = default_policy()
    out_paths = []
    for c in tree_changes(root, base, cand):
        text = c.path.decode("utf-8", "surrogateescape")
        golden = policy.is_golden(text)
        out_paths.append(
            ChangedPath(text, c.old_mode, c.new_mode, c.added, c.deleted, c.binary, golden)
        )
    return out_paths


def make(reader: Callable[[Path], LoadedReceipt] = read_receipt) -> ProviderFn:
    """The provider over ``reader`` (a command that already read the receipt passes it on:
    one read per command)."""

    async def acquire(args: Mapping[str, Any]) -> Observed:
        return _acquire(reader, Path(args["receipt"]))

    return acquire


def _acquire(reader: Callable[[Path], LoadedReceipt], path: Path) -> Observed:
    try:
        receipt = reader(path).receipt
    except FactoryError as exc:
        return operational("provider-unavailable", f"the receipt cannot be read ({exc.code})")
    cand = receipt.final_candidate()
    if cand is None:
        return operational("provider-refused", "the receipt binds no candidate")
    body = cand.body
    try:
        changes = changed_paths(Path(receipt.worktree), body.base_tree, body.candidate_tree)
    except FactoryError as exc:
        return operational("provider-crashed", f"git could not diff the trees ({exc.code})")
    risk = classify(changes)
    lenses = select_lenses(risk, DEFAULT_FOCUS)
    document = {
        "level": risk.level,
        "reasons": [r.code for r in risk.reasons],
        "lenses": list(lenses),
        "lens_count": len(lenses),
        "changed_lines": sum(c.lines for c in changes),
    }
    return Observed(document, scope_kind="tree", scope_value=body.candidate_tree)


acquire = make()
