"""Wire one ``factory publish``: the gate step as the publish flow's admission, the gate
lookup pinned to the step's run, and the runpack exported beside OUT (SPEC X-1).

The CLI (:mod:`factory.cli.publish_cmd`) and the tests build the flow here, then hand it
to the operator's :func:`~factory.operator.session.operate` like any publication.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from factory.agent.receipt_once import VerifiedReceipt, pinned
from factory.gate.acquire import ProviderFn, default_providers
from factory.gate.scenario import Scenario
from factory.operator.forge_client import Forge
from factory.operator.publication import Precondition, require_accepted_gate
from factory.operator.publish_flow import PublishFlow, Source, verified_source
from factory.pipeline.binding import StoreGate
from factory.pipeline.gatestep import GateStep, run_params


def export_path(out: Path) -> Path:
    """Where a publication exports its gate run's runpack: ``<OUT>.gate`` beside OUT."""
    return out.with_name(out.name + ".gate")


def pipeline_flow(
    forge: Forge,
    repository: str,
    receipt: Path,
    remote: str,
    *,
    out: Path,
    scenario: Scenario,
    store: Path,
    test_argv: Sequence[str] | None,
    base: str | None = None,
    providers: Mapping[str, ProviderFn] | None = None,
    progress: Callable[[str], None] | None = None,
    preconditions: Sequence[Precondition] = (require_accepted_gate,),
    held: tuple[Source, VerifiedReceipt] | None = None,
) -> tuple[PublishFlow, GateStep]:
    """The publish flow of ``factory publish`` and its gate step (inspectable after).

    ``held``: ``--receipt`` as the caller already read and verified it
    (:func:`~factory.operator.publish_flow.verified_source`); it is read here otherwise.
    Either way the command reads and verifies the receipt once and passes that value on:
    to the gate's receipt evidence sources (:func:`~factory.agent.receipt_once.pinned`)
    and to the flow's first observation.

    Raises:
        SourceRefused: ``--receipt`` is not a receipt a publication can stand on.
        PublishRefused: the scenario's params cannot be filled (no test command, …).
    """
    source, verified = held if held is not None else verified_source(receipt, repository)
    params = run_params(scenario, source.agent_path, verified.loaded.receipt, test_argv)
    step = GateStep(
        store,
        scenario,
        params,
        export_path(out),
        providers=providers
        if providers is not None
        else default_providers(receipts=pinned(verified)),
        progress=progress,
    )
    flow = PublishFlow(
        forge,
        repository,
        receipt,
        remote,
        base,
        preconditions=preconditions,
        gate=StoreGate(store, scenario, run=step.run),
        export_to=export_path(out),
        held=(source, verified),
    )

    def gate_first() -> None:
        try:
            step()
        finally:
            flow.gate_record = step.record
        flow.gate_head = step.head

    flow.before = gate_first
    return flow, step
