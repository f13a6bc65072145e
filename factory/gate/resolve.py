"""Resolve one condition from the evidence snapshot, then apply its predicate (SPEC G).

Resolution is exactly one of:

* ``present``: an eligible record holds a value of the condition's domain;
* ``observed-absent``: an eligible record is a *complete* observation of absence in the
  universe the condition declares;
* ``missing``: no record for this condition at all;
* ``insufficient``: records exist, but none satisfies the condition's evidence policy.

The predicate then gives ``true``/``false``/``unknown``: present → the predicate's answer
(``unknown`` only when a null meets an ordering); observed-absent → ``exists`` false,
``not_exists`` true, every other predicate unknown; missing and insufficient → unknown.

Failures are not truth values. Any record for the condition whose bytes no longer hash,
or whose signature does not verify, makes the condition **failed (integrity)**; the chosen
record being a failure observation, or holding a value outside the domain, makes it
**failed (operational)**. A failure observation is not judged by the policy's scope (it
observed nothing, so it has none); every other facet still applies to it.

Among eligible records the newest ``observed_at`` wins, ties broken by id, so the result
never depends on the order records arrive in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from factory.gate.evidence import Evidence, Failure, signed_message
from factory.gate.logic import FAILED, FALSE, TRUE, UNKNOWN
from factory.gate.scenario import Condition, Policy
from factory.gate.values import OutsideDomain, coerce, encode


class Outcome(NamedTuple):
    """One condition's resolution and result, with what decided it (a tuple: built once
    per condition per evaluation, so cheap construction matters)."""

    condition: str
    resolution: str  # present | observed-absent | missing | insufficient | failed
    result: str  # true | false | unknown | failed
    record: str | None = None
    value: Any = None
    failures: tuple[Failure, ...] = ()
    rejected: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (record id, reasons)

    def to_json(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "resolution": self.resolution,
            "result": self.result,
            "record": self.record,
            "value": self.value,
            "failures": [f.to_json() for f in self.failures] if self.failures else [],
            "rejected": [{"record": r, "reasons": list(why)} for r, why in self.rejected]
            if self.rejected
            else [],
        }


@dataclass(frozen=True, slots=True)
class Context:
    """What policies are judged against: the run's parameters, the scenario's keys, now."""

    params: Mapping[str, str]
    keys: Mapping[str, bytes]
    now: int


def signature_ok(record: Evidence, keys: Mapping[str, bytes]) -> bool | None:
    """True: verified by a declared key; False: does not verify; None: unsigned or the key
    id is not declared (the signature then proves nothing, but it is not a forgery)."""
    sig = record.signature
    if sig is None or sig.key_id not in keys:
        return None
    try:
        Ed25519PublicKey.from_public_bytes(keys[sig.key_id]).verify(
            sig.value, signed_message(record.payload)
        )
    except InvalidSignature:
        return False
    return True


def policy_reasons(
    record: Evidence, cond: Condition, ctx: Context, verified: bool | None
) -> tuple[str, ...]:
    """Why ``record`` may not be used for ``cond`` (empty: eligible)."""
    policy: Policy = cond.policy
    why: list[str] = []
    if record.ingress not in policy.ingress:
        why.append("ingress-not-allowed")
    if policy.producers and not any(
        _producer_matches(p, record.producer) for p in policy.producers
    ):
        why.append("producer-not-allowed")
    # A failure observation measured nothing, so it has no scope to compare: judging it by
    # scope would launder every failed acquisition into "insufficient" (unknown).
    if policy.scope_kind is not None and record.kind != "failure":
        wanted = (
            policy.scope_value if policy.scope_param is None else ctx.params.get(policy.scope_param)
        )
        if record.scope_kind != policy.scope_kind or record.scope_value != wanted:
            why.append("scope-mismatch")
    if policy.independent and not _independent(record, ctx, verified):
        why.append("not-independent-of-actor")
    if record.observed_at > ctx.now:
        why.append("observed-in-the-future")
    elif policy.max_age_ns is not None and ctx.now - record.observed_at > policy.max_age_ns:
        why.append("too-old")
    if policy.signed_by and not (
        verified and record.signature and record.signature.key_id in policy.signed_by
    ):
        why.append("not-signed-by-a-listed-key")
    if record.mutated:
        why.append("observation-changed-what-it-measured")
    if record.kind == "absent":
        if cond.universe is None or record.universe != cond.universe:
            why.append("absence-outside-the-declared-universe")
        elif not record.complete:
            why.append("absence-from-an-incomplete-observation")
    return tuple(why)


def _producer_matches(pattern: str, producer: str) -> bool:
    if pattern.endswith("*"):
        return producer.startswith(pattern[:-1])
    return producer == pattern


def _independent(record: Evidence, ctx: Context, verified: bool | None) -> bool:
    actor = ctx.params.get("actor")
    if record.actor is None or record.actor == actor:
        return False
    # A submitter's claim about who produced the bytes is only worth a signature.
    return record.ingress == "acquired" or verified is True


def resolve(cond: Condition, records: Sequence[Evidence], ctx: Context) -> Outcome:
    """Resolve ``cond`` from its records (any order) and apply its predicate."""
    if not records:
        return Outcome(cond.id, "missing", UNKNOWN)
    if len(records) == 1:
        only = records[0]
        if only.problem is None and only.signature is None:  # the common case, fast
            reasons = policy_reasons(only, cond, ctx, None)
            if reasons:
                return Outcome(cond.id, "insufficient", UNKNOWN, rejected=((only.id, reasons),))
            return _apply(cond, only, ())
    broken: list[Failure] = []
    rejected: list[tuple[str, tuple[str, ...]]] = []
    eligible: list[Evidence] = []
    for record in sorted(records, key=_by_id) if len(records) > 1 else records:
        if record.problem is not None and record.problem.family == "integrity":
            broken.append(record.problem)
            continue
        verified = signature_ok(record, ctx.keys)
        if verified is False:
            broken.append(Failure("integrity", "signature-invalid", f"record {record.id}"))
            continue
        why: tuple[str, ...] = ("unparsable",) if record.problem is not None else ()
        why = why or policy_reasons(record, cond, ctx, verified)
        if why:
            rejected.append((record.id, why))
        else:
            eligible.append(record)
    if broken:
        return Outcome(cond.id, "failed", FAILED, failures=tuple(broken), rejected=tuple(rejected))
    if not eligible:
        return Outcome(cond.id, "insufficient", UNKNOWN, rejected=tuple(rejected))
    chosen = eligible[0] if len(eligible) == 1 else max(eligible, key=_newest)
    return _apply(cond, chosen, tuple(rejected))


def _by_id(record: Evidence) -> str:
    return record.id


def _newest(record: Evidence) -> tuple[int, str]:
    return (record.observed_at, record.id)


def _apply(
    cond: Condition, chosen: Evidence, rejected: tuple[tuple[str, tuple[str, ...]], ...]
) -> Outcome:
    if chosen.kind == "failure":
        assert chosen.failure is not None
        return Outcome(
            cond.id, "failed", FAILED, chosen.id, failures=(chosen.failure,), rejected=rejected
        )
    if chosen.kind == "absent":
        name = cond.predicate.name
        result = FALSE if name == "exists" else TRUE if name == "not_exists" else UNKNOWN
        return Outcome(cond.id, "observed-absent", result, chosen.id, rejected=rejected)
    try:
        value = coerce(cond.domain, chosen.value)
    except OutsideDomain as exc:
        failure = Failure("operational", "observation-outside-domain", str(exc))
        return Outcome(cond.id, "failed", FAILED, chosen.id, failures=(failure,), rejected=rejected)
    answer = cond.predicate.test(value)
    result = UNKNOWN if answer is None else TRUE if answer else FALSE
    return Outcome(
        cond.id, "present", result, chosen.id, encode(cond.domain, value), rejected=rejected
    )
