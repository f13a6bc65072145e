"""The gate's typed errors and their registered codes (SPEC F-2, F-3).

Condition-level operational and integrity failures are *data* in an evaluation (see
:mod:`factory.gate.evidence`), not exceptions: an evaluation that meets them still ends
and names them. The exceptions here are about the command itself. Each class carries one
default code; raise it as ``raise SCENARIO_INVALID("what happened")`` (one style).
"""

from __future__ import annotations

from factory.errors import Failure, IntegrityFailure, Refused, UsageError


class ScenarioInvalid(UsageError):
    """A scenario does not load: syntax, domain, predicate, operand, graph (exit 2)."""


class UnknownScenario(UsageError):
    """No scenario file or built-in scenario by that name (exit 2)."""


class ParamsInvalid(UsageError):
    """A run id, run parameter, request id or time given on the command line is malformed,
    missing or undeclared (exit 2)."""


class RunMissing(UsageError):
    """The store holds no run by that id (exit 2)."""


class RunConflict(Refused):
    """A run id is taken by a run with another scenario or other parameters (exit 2)."""


class EvidenceRefused(Refused):
    """Submitted evidence failed the admission boundary; nothing was stored (exit 2)."""


class EvidenceConflict(Refused):
    """An evidence id already names other bytes in this run (exit 2)."""


class RequestConflict(Refused):
    """An acceptance request id already names another candidate in this run (exit 2)."""


class OpenRefused(Refused):
    """A stage was asked to open while not ready, or is already open or completed (exit 2)."""


class CandidateStale(Failure):
    """The head moved since the candidate was derived; re-derive it (exit 4, not corrupt)."""


class CommitOutcomeUnknown(Failure):
    """The store may or may not have committed; the next load settles it (exit 4)."""


class StoreCorrupt(IntegrityFailure):
    """The stored history does not re-validate (chain, sequence or laws) (exit 4)."""


class StoreFailure(Failure):
    """The store could not be opened or written (exit 4)."""


class ExportFailed(Failure):
    """A runpack folder was claimed but could not be completed (exit 4)."""


class RunpackNotVerified(IntegrityFailure):
    """At least one property of a runpack failed verification (exit 4)."""


SCENARIO_INVALID = ScenarioInvalid.define(
    "gate-scenario-invalid", "fix the scenario where the message points and load it again",
    default=True,
)  # fmt: skip
SCENARIO_UNKNOWN = UnknownScenario.define(
    "gate-scenario-unknown",
    "give a .toml/.json path or a name from 'factory gate scenario list'",
    default=True,
)
PARAMS_INVALID = ParamsInvalid.define(
    "gate-params-invalid", "fix the named flag or parameter (see --help)", default=True
)
RUN_MISSING = RunMissing.define(
    "gate-run-missing",
    "start it with 'factory gate start', or pass the --store that holds it",
    default=True,
)
RUN_CONFLICT = RunConflict.define("gate-run-conflict", "choose a new run id", default=True)
EVIDENCE_REFUSED = EvidenceRefused.define(
    "gate-evidence-refused",
    "fix the file (a factory.gate-observation/1 document) and submit it again",
    default=True,
)
EVIDENCE_CONFLICT = EvidenceConflict.define(
    "gate-evidence-conflict", "use a new evidence id for different bytes", default=True
)
REQUEST_CONFLICT = RequestConflict.define(
    "gate-request-conflict", "use a new request id for a different candidate", default=True
)
OPEN_REFUSED = OpenRefused.define(
    "gate-open-refused", "open only stages that 'factory gate status' shows as ready",
    default=True,
)  # fmt: skip
STALE = CandidateStale.define("gate-stale", "evaluate again from the new head", default=True)
COMMIT_OUTCOME_UNKNOWN = CommitOutcomeUnknown.define(
    "commit-outcome-unknown",
    "run any gate command on this run: its next load settles the outcome",
    default=True,
)
STORE_CORRUPT = StoreCorrupt.define(
    "gate-store-corrupt",
    "keep the store as evidence (it is never repaired) and start the run in a new store",
    default=True,
)
STORE_FAILED = StoreFailure.define(
    "gate-store-failed", "check the --store path, its folder's permissions and free space",
    default=True,
)  # fmt: skip
EXPORT_FAILED = ExportFailed.define(
    "gate-export-failed",
    "free space or fix permissions, then export again to a new --out folder",
    default=True,
)
RUNPACK_NOT_VERIFIED = RunpackNotVerified.define(
    "gate-runpack-not-verified",
    "read the failed properties' problems in the JSON on stdout",
    default=True,
)
