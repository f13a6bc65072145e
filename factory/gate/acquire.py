"""Acquire evidence for every condition with a binding, through the built-in providers.

Acquisition is an effect and happens here, before evaluation (which stays pure). Each
provider's observation becomes one ``factory.gate-observation/1`` record with ingress
``acquired``, producer ``factory:<provider>``, actor ``factory``, the injected clock's time,
the provider's scope, its output stored content-addressed as artefacts, and the binding's
``select`` pointer applied: a value when it selects one, otherwise a complete observation
of absence in the condition's declared universe. A provider that could not observe yields
a record holding its typed failure, so the evaluation reports it instead of guessing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from factory.agent.receipt_once import Reader, read_and_verify
from factory.agent.verify import read_receipt
from factory.documents.canonical import exact_bytes, sha256_hex
from factory.gate.acquire_args import expand, select
from factory.gate.evidence import ACQUIRED_PREFIX, Evidence, admit
from factory.gate.observation import SCHEMA
from factory.gate.providers import Observed, command, files, git, receipt, review_gate, risk
from factory.gate.scenario import Condition
from factory.gate.service import Gate, LoadedRun
from factory.gate.values import format_instant

ProviderFn = Callable[[Mapping[str, Any]], Awaitable[Observed]]


def default_providers(
    review_runner: review_gate.Runner | None = None, receipts: Reader | None = None
) -> dict[str, ProviderFn]:
    """The built-in providers; ``review_runner`` replaces how the review gate is run,
    ``receipts`` how an agent receipt is read and verified (a command that holds it
    already passes :func:`factory.agent.receipt_once.pinned`)."""
    return {
        "agent-receipt": receipt.make(receipts or read_and_verify),
        "candidate-risk": risk.make(
            read_receipt if receipts is None else (lambda path: receipts(path).loaded)
        ),
        "command": command.acquire,
        "file": files.acquire,
        "git": git.acquire,
        "review-gate": review_gate.make(review_runner or review_gate.default_runner),
    }


def _expand(value: Any, params: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return expand(value, params)
    if isinstance(value, list):
        return [_expand(v, params) for v in value]
    return value


async def acquire(
    gate: Gate,
    run: LoadedRun,
    *,
    providers: Mapping[str, ProviderFn] | None = None,
    only: Collection[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Evidence]:
    """Acquire and store one record per bound condition (or those in ``only``);
    ``progress`` hears one line before each acquisition (no provider output)."""
    chosen = providers if providers is not None else default_providers()
    out = []
    for cond in run.scenario.conditions.values():
        if cond.acquire is None or (only is not None and cond.id not in only):
            continue
        if progress is not None:
            progress(f"acquiring {cond.id} via {cond.acquire.provider}")
        args = {k: _expand(v, run.state.params) for k, v in cond.acquire.args.items()}
        observed = await chosen[cond.acquire.provider](args)
        payload = _document(gate, cond, args, observed)
        record = admit(
            f"{ACQUIRED_PREFIX}{cond.id}:{sha256_hex(payload)[:24]}", payload,
            conditions=run.scenario.conditions, ingress="acquired",
        )  # fmt: skip
        gate.record_acquired(run, record)
        out.append(record)
    return out


def _document(gate: Gate, cond: Condition, args: Mapping[str, Any], observed: Observed) -> bytes:
    assert cond.acquire is not None
    if observed.failure is not None:
        observation: dict[str, Any] = {"failure": observed.failure.to_json()}
    else:
        found, value = select(observed.document, str(args.get("select", "")))
        observation = (
            {"value": value}
            if found
            else {"absent": {"universe": cond.universe or "document", "complete": True}}
        )
    artefacts = [
        {"role": role, "sha256": gate.store.put_blob(data), "bytes": len(data)}
        for role, data in observed.artefacts
    ]
    scope: dict[str, Any] = {"kind": observed.scope_kind}
    if observed.scope_value is not None:
        scope["value"] = observed.scope_value
    doc = {
        "schema": SCHEMA,
        "condition": cond.id,
        "ingress": "acquired",
        "producer": f"factory:{cond.acquire.provider}",
        "actor": "factory",
        "content_type": observed.content_type,
        "derivation": list(observed.derivation),
        "scope": scope,
        "observed_at": format_instant(gate.clock()),
        "observation": observation,
        "mutated": observed.mutated,
        "artefacts": artefacts,
    }
    return exact_bytes(doc)
