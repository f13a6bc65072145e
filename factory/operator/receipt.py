"""The operator receipt ``factory.operator-receipt/1`` (SPEC O-3).

Reserved first (status ``reserved``) at ``--out`` before anything is read or spent; from
then on every return path rewrites it as a terminal record:

==================  ====  ===========================================================
status              exit  meaning
==================  ====  ===========================================================
``refused``         2     nothing was spent; ``refusal`` names ``{stage, code}`` (4 when
                          a decision-gate condition failed: stage ``gate``)
``held``            3     ``factory publish``: the decision gate did not accept the
                          candidate (a verdict; ``refusal`` is ``{gate, gate-held}``)
``executed``        0     the grant was spent and the action ran to its end
``execution-failed`` 4    the grant was spent and the action failed (``error``)
``interrupted``     130   Ctrl-C or a signal outside a prompt (``grant`` says if spent)
==================  ====  ===========================================================

(an internal error leaves ``refused`` or ``execution-failed`` with code ``internal`` and
exit 1). ``gate`` (``factory publish`` and every CLI publication) records the decision-gate
run the command stood on or stopped at — run, scenario, head, stage states — and the
runpack exported beside OUT, so ``factory operator verify --deep`` can replay it. The
receipt is *redacted*: no token, no passphrase, no private key; error messages
carry no paths. ``revision`` is the domain-separated digest of the canonical body.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from factory.documents.canonical import digest
from factory.models import StrictModel
from factory.operator.gateref import GateRun
from factory.operator.grant import SignedGrant
from factory.operator.intent import PublishIntent, RunIntent

RECEIPT_SCHEMA: Final = "factory.operator-receipt/1"
RECEIPT_TAG: Final = "factory.operator-receipt/1"

Status = Literal["reserved", "refused", "held", "executed", "execution-failed", "interrupted"]
Stage = Literal["gate", "admission", "observe", "intent", "confirm", "unlock", "grant"]
Command = Literal["run", "publish"]

RESIDUALS: tuple[str, ...] = (
    "The grant shows that the holder of the private key and its passphrase typed this "
    "intent's revision at a terminal; it does not show who that person was.",
    "The forge token's holder can do on the forge whatever the token allows, with or "
    "without factory; factory only limits what factory itself does with it.",
    "A same-user local actor can rewrite the ledger, this receipt, git and the program; "
    "hashes show consistency, not authorship.",
    "A crash after the grant was spent and before this receipt was rewritten leaves the "
    "'reserved' record and a spent ledger entry.",
    "Commit and pull request text is outside every content check; a receipt proves "
    "identity and process, never that the change is correct.",
)


class Refusal(StrictModel):
    """Where the operator flow stopped before anything was spent, and why."""

    stage: Stage
    code: str


class ErrorRecord(StrictModel):
    """A typed failure after the grant was spent: stable code, message without paths."""

    code: str
    message: str


class LedgerRef(StrictModel):
    """The ledger entry that spent the grant: folder, file name, SHA-256 of its bytes."""

    folder: str
    entry: str
    sha256: str


class GrantRecord(StrictModel):
    """The spent grant, the public key that must verify it, and its ledger entry."""

    signed: SignedGrant
    public_key: str  # SPKI PEM
    ledger: LedgerRef


class AgentRunRef(StrictModel):
    """The agent receipt an ``operator run`` wrote beside OUT (``path`` relative to OUT's
    folder), its bytes' SHA-256, its revision and outcome."""

    path: str
    sha256: str | None
    revision: str | None
    status: str | None
    exit_code: int


class PullRequestRef(StrictModel):
    """The pull request that was opened or reused."""

    number: int
    url: str
    reused: bool


class PublishResult(StrictModel):
    """What each publication step did (``not-run`` when a step was not reached)."""

    commit: str
    branch: str
    local_branch: Literal["created", "reused", "not-run"]
    push: Literal["pushed", "reused", "not-run"]
    pull_request: PullRequestRef | None


class GateExport(StrictModel):
    """The runpack written beside OUT (``path`` relative to OUT's folder): its root hash and
    the SHA-256 of its ``manifest.json`` bytes."""

    path: str
    root_hash: str
    manifest_sha256: str


class GateRecord(GateRun):
    """The decision-gate run a publication stood on, or stopped at (SPEC X-1)."""

    stages: dict[str, str]  # stage id -> completed | open | ready | not-ready
    export: GateExport | None


class Timings(StrictModel):
    started_at: str
    ended_at: str | None


class OperatorReceipt(StrictModel):
    """``factory.operator-receipt/1``."""

    schema_id: Literal["factory.operator-receipt/1"] = Field(default=RECEIPT_SCHEMA, alias="schema")
    status: Status
    exit_code: int | None
    command: Command
    factory_version: str
    repository: str
    intent: RunIntent | PublishIntent | None
    refusal: Refusal | None
    error: ErrorRecord | None
    grant: GrantRecord | None
    agent_run: AgentRunRef | None
    publication: PublishResult | None
    residuals: list[str]
    timings: Timings
    gate: GateRecord | None = None
    revision: str | None = None

    def body_value(self) -> dict[str, Any]:
        value = self.to_json_value()
        value.pop("revision", None)
        return value

    def compute_revision(self) -> str:
        return digest(RECEIPT_TAG, self.body_value())

    def closed(self) -> OperatorReceipt:
        return self.model_copy(update={"revision": self.compute_revision()})


def receipt_bytes(receipt: OperatorReceipt) -> bytes:
    """The exact bytes written: canonical JSON plus LF."""
    return receipt.canonical() + b"\n"
