"""What a publication binds of the decision gate (SPEC X-1): the accepted run and the
review receipt it relied on, as they appear in a publish intent and its grant.

Pure models; finding the run in a gate store is the pipeline's job
(:mod:`factory.pipeline.binding`), which hands the operator a :class:`GateFinding`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from factory.models import StrictModel

if TYPE_CHECKING:
    from factory.agent.receipt import AgentReceipt
    from factory.operator.receipt import GateRecord


class ReviewRef(StrictModel):
    """The review receipt (``factory.review-receipt/1``) the gate's review condition relied
    on: its lineage, state, the tree it approved, and the digest of its canonical bytes."""

    lineage_id: str
    generation: int
    terminal_state: str
    final_candidate_tree: str
    digest: str
    evidence: str  # the gate evidence record whose artefact carries the receipt


class GateRun(StrictModel):
    """Where a decision-gate run is and the head it stands at: the store, the run id, its
    scenario (id and spec hash), the head hash and sequence number, and whether the
    scenario was complete at that head."""

    store: str
    run: str
    scenario: str
    spec_hash: str
    head: str
    seq: int
    completed: bool


class GateRef(GateRun):
    """The accepted decision-gate run a publication stands on (SPEC X-1), as the intent and
    the grant bind it: the run at its accepted head, the candidate tree the run is for, and
    the review receipt when one counted."""

    candidate_tree: str
    review: ReviewRef | None


@dataclass(frozen=True, slots=True)
class GateFinding:
    """What a look for the accepted gate run of a candidate found: the run (``ref``), or
    why there is none (``problem``, one line for ``gate-not-accepted``)."""

    ref: GateRef | None
    problem: str | None = None


class GateLookup(Protocol):
    """How a publication finds and binds its gate run (implemented by the pipeline)."""

    def find(self, agent_receipt: Path, receipt: AgentReceipt) -> GateFinding:
        """The accepted run for ``receipt``'s candidate, or why there is none. Never raises
        for a missing or unfinished run: that is the ``problem``."""
        ...

    def bind(self, ref: GateRef, folder: Path | None) -> GateRecord:
        """The receipt's record of ``ref``; with ``folder``, export the run's runpack there
        first (a new folder) and bind its digests."""
        ...
