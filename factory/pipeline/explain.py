"""Why a gate run is not complete, and what to do next (pure).

From one evaluation record (``factory.gate-evaluation/1``) this lists, for the first stage
that is ready but not completed, every condition of its completion law that is not true —
false (with the observed value), unknown (missing: no evidence; insufficient: evidence
that the condition's policy refused, with the refusal reasons) or failed (its family and
code) — and for the stages behind it, which stage they wait for. Each item carries one
line of advice: a table for the built-in ``publish-candidate`` conditions, a generic line
for any other scenario's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from factory.gate import logic
from factory.gate.scenario import Scenario

_AGAIN = "run 'factory agent' again for a new candidate, then 'factory publish' on its receipt"
ADVICE: Mapping[str, str] = {
    "agent_completed": _AGAIN,
    "agent_approved": _AGAIN,
    "agent_subscription_route": (
        "a rehearsal is never published: run the agent on the subscription route (your own "
        "Claude Code and Codex logins)"
    ),
    "candidate_in_worktree": (
        "the worktree changed after the run: put it back as the agent left it, or run the "
        "agent again"
    ),
    "tests_exit_zero": (
        "make the tests pass in a new agent run (the test command must exit 0 and leave the "
        "worktree's tree unchanged: write only ignored files)"
    ),
    "risk_selects_no_lens": (
        "this candidate's risk tier selects review lenses: 'factory review start', run the "
        "lenses, 'factory review finalize', then 'factory publish' again"
    ),
    "review_gate_allows": (
        "'factory review validate --gate pre-pr' must allow this candidate: follow the "
        "review gate's next command, then 'factory publish' again"
    ),
}
GENERIC = (
    "acquire or submit evidence for it ('factory gate evaluate'), then 'factory publish' again"
)


@dataclass(frozen=True, slots=True)
class Pending:
    """One thing that keeps the run from completing."""

    stage: str
    condition: str | None  # None: the stage waits for another stage
    result: str  # false | unknown | failed | not-ready
    resolution: str  # present | observed-absent | missing | insufficient | failed | waiting
    why: str
    advice: str

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "condition": self.condition,
            "result": self.result,
            "resolution": self.resolution,
            "why": self.why,
            "advice": self.advice,
        }


def _why(outcome: Mapping[str, Any], detail: str | None) -> str:
    resolution = outcome["resolution"]
    if outcome["result"] == "failed":
        failures = outcome.get("failures") or [{}]
        first = failures[0]
        text = f"failed ({first.get('family')} {first.get('code')}): {first.get('message')}"
    elif resolution == "present":
        raw = outcome.get("value")
        value = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        text = f"{outcome['result']}: observed {value}"
    elif resolution == "observed-absent":
        text = "unknown: the observation holds no value"
    elif resolution == "missing":
        text = "unknown: no evidence yet"
    else:
        reasons = sorted({r for item in outcome.get("rejected", []) for r in item["reasons"]})
        text = "unknown: evidence refused by the condition's policy (" + ", ".join(reasons) + ")"
    return f"{text}; {detail}" if detail else text


def pending(
    scenario: Scenario, record: Mapping[str, Any], details: Mapping[str, str] | None = None
) -> list[Pending]:
    """What keeps ``record``'s run from completing (empty when it completes)."""
    if record["delta"]["scenario_complete"] or record.get("run_completed_before"):
        return []
    outcomes = {c["condition"]: c for c in record["conditions"]}
    extra = details or {}
    out: list[Pending] = []
    blocked: str | None = None
    for stage in record["stages"]:
        sid = stage["stage"]
        if stage["after"] == "completed":
            continue
        if stage["after"] == "not-ready" or blocked is not None:
            waits = blocked or "its prerequisites"
            out.append(Pending(sid, None, "not-ready", "waiting", f"waits for {waits}", ""))
            continue
        blocked = sid
        for cid in dict.fromkeys(logic.refs(scenario.stages[sid].complete)):
            outcome = outcomes.get(cid)
            if outcome is None or outcome["result"] == "true":
                continue
            advice = ADVICE.get(cid, GENERIC) if scenario.id == "publish-candidate" else GENERIC
            why = _why(outcome, extra.get(cid))
            out.append(Pending(sid, cid, outcome["result"], outcome["resolution"], why, advice))
    return out


def lines(run: str, items: list[Pending]) -> list[str]:
    """The held explanation a person reads (the caller makes each line inert)."""
    first = next((p.stage for p in items if p.condition is not None), None)
    out = [f"factory publish: HELD by the decision gate (run {run}) at stage {first}."]
    out.append("Not yet true:")
    for item in items:
        if item.condition is None:
            out.append(f"  stage {item.stage}: {item.why}")
            continue
        out.append(f"  {item.stage} / {item.condition}: {item.why}")
        out.append(f"    next: {item.advice}")
    out.append("Nothing was published and nothing was authorized.")
    return out
