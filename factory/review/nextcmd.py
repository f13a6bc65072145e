"""Templates of the gate, recovery and repair commands that ``next`` lists name (SPEC R:
every denial and every wedged state names the next legal command).

Placeholders in capitals (``TEXT``, ``NAME``, ``FILE``) are for the caller to fill; ids and
revisions are filled in, so a template can be run as printed once they are.
"""

from __future__ import annotations

GATE_ORDER = ("pre-commit", "pre-push", "pre-pr", "release")


def validate(gate: str, lineage: str | None = None) -> str:
    tail = f" --lineage {lineage}" if lineage else ""
    return f"factory review validate --gate {gate}{tail}"


def recover(lineage: str, revision: str, disposition: str) -> str:
    cmd = (
        f"factory review recover --predecessor-lineage {lineage} "
        f"--expected-predecessor-revision {revision} --disposition {disposition} "
        "--reason TEXT --actor NAME"
    )
    return cmd + (" --maintainer-authorization FILE" if disposition == "escalated" else "")


def invalidate(lineage: str, revision: str) -> str:
    return (
        f"factory review invalidate --lineage {lineage} --expected-revision {revision} "
        "--reason TEXT"
    )


def reclaim(lineage: str) -> str:
    return f"factory review reclaim --lineage {lineage} --reason TEXT --actor NAME"


def repair(lineage: str, anomaly: str, others: list[str] | tuple[str, ...] = ()) -> str:
    """``others``: every other anomaly of the class, each named with ``--also-invalid``."""
    also = "".join(f" --also-invalid {key}" for key in others)
    return (
        f"factory review repair --lineage {lineage} --class {anomaly}{also} --reason TEXT "
        "--actor NAME --maintainer-authorization FILE"
    )


def rewrite_receipt(lineage: str) -> str:
    """``finalize`` with no input: rewrites a terminal lineage's missing receipt file."""
    return f"factory review finalize --lineage {lineage}"


def show(lineage: str) -> str:
    return f"factory review show --lineage {lineage}"


def after_allow(gate: str) -> tuple[str, ...]:
    """What follows an allow at ``gate``, every entry a runnable command: the git delivery
    where git does it (commit, push), then the next boundary's gate. Opening the pull
    request or publishing the release is the forge's, named in the reason, not here."""
    deliver = {"pre-commit": ("git commit",), "pre-push": ("git push",)}.get(gate, ())
    later = GATE_ORDER[GATE_ORDER.index(gate) + 1 :]
    return (*deliver, *(validate(g) for g in later[:1])) or ("factory review status",)
