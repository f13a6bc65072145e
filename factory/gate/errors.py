"""The gate's typed errors (SPEC F-2, F-3). Each family fixes the exit code.

Condition-level operational and integrity failures are *data* in an evaluation (see
:mod:`factory.gate.evidence`), not exceptions: an evaluation that meets them still ends,
and names them. The exceptions here are about the command itself.
"""

from __future__ import annotations

from factory.errors import Failure, IntegrityFailure, Refused, UsageError


class ScenarioInvalid(UsageError):
    """A scenario does not load: syntax, domain, predicate, operand, graph (exit 2)."""

    default_code = "gate-scenario-invalid"


class UnknownScenario(UsageError):
    """No scenario file or built-in scenario by that name (exit 2)."""

    default_code = "gate-scenario-unknown"


class ParamsInvalid(UsageError):
    """Run parameters missing, undeclared or malformed (exit 2)."""

    default_code = "gate-params-invalid"


class RunMissing(UsageError):
    """The store holds no run by that id (exit 2)."""

    default_code = "gate-run-missing"


class RunConflict(Refused):
    """A run id is taken by a run with another scenario or other parameters (exit 2)."""

    default_code = "gate-run-conflict"


class EvidenceRefused(Refused):
    """Submitted evidence failed the admission boundary; nothing was stored (exit 2)."""

    default_code = "gate-evidence-refused"


class EvidenceConflict(Refused):
    """An evidence id already names other bytes in this run (exit 2)."""

    default_code = "gate-evidence-conflict"


class RequestConflict(Refused):
    """An acceptance request id already names another candidate in this run (exit 2)."""

    default_code = "gate-request-conflict"


class OpenRefused(Refused):
    """A stage was asked to open while not ready, or is already open or completed (exit 2)."""

    default_code = "gate-open-refused"


class CandidateStale(Failure):
    """The head moved since the candidate was derived; re-derive it (exit 4, not corrupt)."""

    default_code = "gate-stale"


class CommitOutcomeUnknown(Failure):
    """The store may or may not have committed; the next load settles it (exit 4)."""

    default_code = "commit-outcome-unknown"


class StoreCorrupt(IntegrityFailure):
    """The stored history does not re-validate (chain, sequence or laws) (exit 4)."""

    default_code = "gate-store-corrupt"


class StoreFailure(Failure):
    """The store could not be opened or written (exit 4)."""

    default_code = "gate-store-failed"


class RunpackUnreadable(IntegrityFailure):
    """An export folder lacks a readable manifest or scenario (exit 4)."""

    default_code = "gate-runpack-invalid"
