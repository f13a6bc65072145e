"""What is legal next for a lineage (SPEC R: no wedged state): :func:`next_commands`
names, for every state, the commands that move it on, and :func:`refuse` builds a refusal
that carries them. Pure functions of the state."""

from __future__ import annotations

from factory.documents.canonical import digest_plain
from factory.errors import Code
from factory.review import nextcmd
from factory.review.admission import NeedsRefuter, admit
from factory.review.documents import STATE_TAG
from factory.review.errors import ReviewRefused
from factory.review.state import ReviewState


def _cmd(state: ReviewState, rest: str) -> str:
    return f"factory review finalize --lineage {state.lineage_id} {rest}"


def next_commands(state: ReviewState | None) -> tuple[str, ...]:
    """The legal next commands for ``state`` (templates; most useful first)."""
    if state is None:
        return ("factory review start",)
    lid, failed = state.lineage_id, _cmd(state, "--failed")
    evidence = (_cmd(state, "--evidence FILE"), _cmd(state, "--evidence-run -- CMD"))
    if state.state == "reviewing":
        missing = state.missing_lenses()
        if missing:
            runs = tuple(f"factory review lens --lineage {lid} --lens {lens}" for lens in missing)
            # one --result FILE per missing lens, in the order the lenses are listed
            runs = (*runs, _cmd(state, " ".join("--result FILE" for _ in missing)))
            extra = (nextcmd.invalidate(lid, _revision(state)),) if pristine(state) else ()
            return (*runs, failed, *extra)
        pending = admit_pending(state)
        if pending:
            return (_cmd(state, "--refuter FILE"), failed)
        # with evidence the review finishes at once; without, it completes to validating
        return (_cmd(state, "--evidence FILE"), _cmd(state, "").rstrip(), failed)
    if state.state == "correction_required":
        if state.correction.forecast is None:
            return (_cmd(state, "--correction-lines N"), failed)
        return (_cmd(state, "--validation FILE"), failed)
    if state.state == "validating":
        return (*evidence, failed)
    return _terminal_commands(state)


def _revision(state: ReviewState) -> str:
    return digest_plain(STATE_TAG, state.to_json_value())


def pristine(state: ReviewState) -> bool:
    """Nothing judged, corrected or evidenced yet: the only state invalidate applies to."""
    c = state.correction
    return state.state == "reviewing" and not (
        state.lens_results or state.review or c.attempts or c.forecast or state.final_evidence
    )


def _terminal_commands(state: ReviewState) -> tuple[str, ...]:
    """Terminal states (issue 13): gates for an approval, recovery for the others."""
    lid, show = state.lineage_id, nextcmd.show(state.lineage_id)
    if state.state == "approved":
        return (*(nextcmd.validate(g) for g in nextcmd.GATE_ORDER), show)
    if state.state == "invalidated":
        return (nextcmd.recover(lid, _revision(state), "invalidated"), show)
    return (
        nextcmd.recover(lid, _revision(state), "escalated"),
        show,
        "factory review start",
    )


def admit_pending(state: ReviewState) -> tuple[str, ...]:
    """Finding ids that still need the refuter before admission can finish."""
    result = admit(state.findings(), state.genesis_paths, None)
    return result.finding_ids if isinstance(result, NeedsRefuter) else ()


def refuse(state: ReviewState | None, message: str, code: Code[ReviewRefused]) -> ReviewRefused:
    """A refusal that names the legal next commands of ``state``."""
    return ReviewRefused(message, code=code, next=next_commands(state))
