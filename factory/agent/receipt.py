"""The agent-run receipt ``factory.agent-receipt/1`` and its pieces (SPEC A-4, A-7, A-8).

A receipt is written twice at the same path: first a ``running`` reservation (SPEC A-2),
then — on every return path — a terminal record (``completed | rejected | failed |
interrupted``) closed by ``revision``: the domain-separated digest (tag
:data:`RECEIPT_TAG`) of the canonical body, which is the receipt's JSON value without the
``revision`` key (SPEC F-4).

Field names are stable: ``factory receipt show`` (another module) renders these models.

Nothing here embeds raw model output: evidence is referenced by path, size, SHA-256,
media type and policy label (SPEC A-7). Error messages carry no paths or secrets.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from factory.documents.canonical import digest
from factory.models import ErrorRecord as ErrorRecord  # defined once, embedded here
from factory.models import StrictModel

RECEIPT_SCHEMA: Final = "factory.agent-receipt/1"
RECEIPT_TAG: Final = "factory.agent-receipt/1"
CANDIDATE_SCHEMA: Final = "factory.candidate-identity/1"
CANDIDATE_TAG: Final = "factory.candidate-identity/1"
EVIDENCE_POLICY: Final = "local-sensitive-content-addressed"

Status = Literal["running", "completed", "rejected", "failed", "interrupted"]
PhaseName = Literal["worker", "initial_review", "repair", "final_review"]
RoleName = Literal["worker", "repair", "reviewer"]
VerdictName = Literal["APPROVE", "REQUEST_CHANGES"]

DECLARED_RESIDUALS: tuple[str, ...] = (
    "The worker and the repair ran as the host user: network use, secret reads, installs, "
    "writes outside the worktree and git actions undone before they returned are not "
    "observed; this is not OS containment.",
    "The reviewer's read-only sandbox is requested from the provider CLI; the factory only "
    "observes its effect afterwards (worktree tree, git control files, candidate identity).",
    "Hashes show consistency, not authorship: a same-user local actor can rewrite the "
    "receipt, the evidence, git and the program.",
    "A receipt proves identity and process, never that the change is correct; APPROVE "
    "grants no publication authority.",
)


class EvidenceRef(StrictModel):
    """One stored evidence file (SPEC A-7).

    ``path`` is relative to the receipt's folder when the evidence folder lies under it,
    else absolute. ``bytes`` is the size in bytes; ``sha256`` the plain SHA-256 hex of the
    file (re-checkable with ``sha256sum``).
    """

    role: str
    path: str
    bytes: int
    sha256: str
    media_type: str
    policy: Literal["local-sensitive-content-addressed"] = EVIDENCE_POLICY
    truncated: bool = False
    """A provider stream longer than its cap: the file holds its first ``bytes`` bytes."""
    stream_bytes: int | None = None
    """With ``truncated``: the stream's true length in bytes (what the child wrote)."""

    @model_serializer(mode="wrap")
    def _omit_untruncated(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        # The two fields appear only on a truncated stream, so every other reference keeps
        # the bytes (and receipts their revision) it had before they existed.
        value = handler(self)
        if isinstance(value, dict) and not self.truncated and self.stream_bytes is None:
            value.pop("truncated", None)
            value.pop("stream_bytes", None)
        return value


class ChangedPath(StrictModel):
    """A path that differs between the base tree and the candidate tree (SPEC A-4).

    ``state`` is ``added``, ``modified`` or ``deleted``; ``bytes``/``sha256`` describe the
    file in the worktree (``None`` when deleted); ``mode`` is git's octal mode string
    (``100644``, ``100755``; ``000000`` when deleted).
    """

    path: str
    state: Literal["added", "modified", "deleted"]
    mode: str
    bytes: int | None
    sha256: str | None


class CandidateBody(StrictModel):
    """The record whose digest is the candidate identity (SPEC A-4).

    Everything here is re-derivable from the live worktree by code: it holds no evidence
    paths and no timing. ``status_sha256``/``patch_sha256`` are plain SHA-256 hex of the
    exact ``git status --porcelain=v2 -z --untracked-files=all`` bytes and of the binary
    patch base tree → candidate tree (new untracked files included).
    """

    schema_id: Literal["factory.candidate-identity/1"] = Field(
        default=CANDIDATE_SCHEMA, alias="schema"
    )
    base_commit: str
    base_tree: str
    candidate_tree: str
    status_bytes: int
    status_sha256: str
    patch_bytes: int
    patch_sha256: str
    files: list[ChangedPath]

    def identity(self) -> str:
        """``sha256:<hex>`` over the canonical body with tag :data:`CANDIDATE_TAG`."""
        return digest(CANDIDATE_TAG, self.to_json_value())


class PathCollision(StrictModel):
    """Paths of the candidate tree that would be one name on a case-insensitive or
    normalising file system (macOS, Windows): ``kind`` is ``nfc`` when they differ only by
    Unicode normalisation, else ``case-fold``; ``paths`` are full and sorted."""

    kind: Literal["case-fold", "nfc"]
    paths: list[str]


class CandidateRecord(StrictModel):
    """A candidate as bound in a receipt: the identity, its body, and the stored status
    bytes and patch as evidence (so the candidate can be replayed).

    ``conversions_differ``: the repository's own conversions (end-of-line, ``ident``,
    working-tree encoding, a clean filter) would store, for at least one changed file, a
    blob other than the raw bytes bound here — a plain ``git add`` would not commit what
    was reviewed. ``collisions``: case-fold/NFC collision groups among the candidate
    tree's paths (such a tree cannot be checked out on macOS or Windows).
    """

    identity: str
    body: CandidateBody
    status_evidence: EvidenceRef
    patch_evidence: EvidenceRef
    conversions_differ: bool
    collisions: list[PathCollision]


class Candidates(StrictModel):
    """The initial candidate (after the worker) and the repaired one (after the repair)."""

    initial: CandidateRecord | None = None
    repaired: CandidateRecord | None = None


class Binding(StrictModel):
    """What a reviewer phase bound before it ran (SPEC A-5).

    ``worktree_tree``: digest of every entry of the worktree except ``.git`` (ignored files
    and ``node_modules`` included, symlinks by target); ``git_control``: digest of the git
    directories' mutable control files; ``entries``: number of worktree entries bound.
    """

    worktree_tree: str
    git_control: str
    entries: int


class PhaseRecord(StrictModel):
    """One provider phase (SPEC A-8).

    ``outcome`` is ``ok`` (worker/repair), the verdict (reviews) or a failure code.
    ``observed_postcondition`` names what code checked afterwards and what it saw.
    ``swept_processes``: descendants of the CLI still alive when its leader exited (or
    was stopped), frozen and killed before anything was bound — what they wrote before
    that is in the worktree; None when no CLI run got that far (SPEC P-1).
    ``child_env_names``: the sorted names (never the values) of the environment the
    provider's process got; ``None`` when the phase ended before the profile reported it.
    A phase that observed a git or worktree mutation stores the sorted changed paths as
    evidence ``<phase>-mutation-paths`` (NUL-terminated path bytes).
    Times: ``started_at``/``ended_at`` UTC RFC 3339 strings, ``duration_ms`` milliseconds.
    """

    phase: PhaseName
    role: RoleName
    profile: str
    cli_version: str | None
    requested_authority: str
    argv_shape: list[str]
    process_exit_code: int | None
    observed_postcondition: str
    outcome: str
    verdict: VerdictName | None
    reviewed_identity: str | None
    binding: Binding | None
    evidence: list[EvidenceRef]
    child_env_names: list[str] | None
    started_at: str
    ended_at: str
    duration_ms: int
    swept_processes: int | None = None


Isolation = Literal["caller-supplied-linked-git-worktree", "factory-created-linked-git-worktree"]


class GitSettings(StrictModel):
    """Effective git settings that decide how git itself converts a checkout's bytes: the
    values of ``core.autocrlf``, ``core.eol``, ``core.fileMode``, ``core.symlinks`` as git
    resolves them over every configuration scope (``None``: set in no scope)."""

    autocrlf: str | None
    eol: str | None
    filemode: str | None
    symlinks: str | None


class AttributesFile(StrictModel):
    """A ``.gitattributes`` blob of the base tree: its path and the SHA-256 of its bytes."""

    path: str
    sha256: str


class BaseRecord(StrictModel):
    """The entry state of the worktree (SPEC A-3).

    ``isolation`` says who made the linked worktree: the caller (``--worktree``) or factory
    itself (``--repo``, see :class:`WorktreeCreation`).

    ``branch``: the ref HEAD named at entry (``refs/heads/...``), ``None`` when detached.
    ``git_settings`` and ``gitattributes``: what git's own conversions would have used.
    ``entry_divergence``: when the bytes on disk of some base paths differed from their
    base blobs at entry (a converting checkout), the evidence listing them with their raw
    entries (``mode SP id TAB path NUL``), so a later re-derivation treats them as unchanged;
    ``None`` when every base path held its blob's exact bytes.
    """

    commit: str
    tree: str
    index_tree: str
    branch: str | None
    git_settings: GitSettings
    gitattributes: list[AttributesFile]
    entry_divergence: EvidenceRef | None
    isolation: Isolation = "caller-supplied-linked-git-worktree"
    execution_boundary: Literal["host-user-process"] = "host-user-process"


class WorktreeCreation(StrictModel):
    """The linked worktree factory created for the run (``factory agent --repo``).

    ``repository``: the repository's common git directory; ``base_commit``: the full commit
    id the base was pinned to, once, before anything was created; ``branch``: the new
    branch's short name, ``None`` for a detached HEAD; ``path``: the worktree's folder
    (physical). Written into the ``running`` reservation before the folder exists, so a
    run that fails or is interrupted while creating it still names it. The worktree is
    never removed automatically (``factory worktree remove`` does it on request).
    """

    repository: str
    base_commit: str
    branch: str | None
    path: str


class FactoryProcess(StrictModel):
    """The factory process that writes the receipt (``pid``, its start time in clock ticks
    after boot, and the boot id): a ``running`` receipt whose process is gone was
    abandoned — killed before it could write its terminal record."""

    pid: int
    start_ticks: int
    boot_id: str


class Timings(StrictModel):
    """Wall-clock bounds of the run (UTC RFC 3339) and its duration in milliseconds."""

    started_at: str
    ended_at: str | None
    duration_ms: int | None


#: Optional receipt fields left out of the JSON value when they are ``None``.
OMITTED_WHEN_ABSENT: Final = ("route_evidence", "trace_id", "factory_process", "worktree_creation")


class AgentReceipt(StrictModel):
    """``factory.agent-receipt/1`` (SPEC A-8).

    ``status == "running"`` only in the reservation; every terminal receipt has an
    ``exit_code`` (0 completed, 3 rejected, 4 failed, 130 interrupted, 1 internal) and a
    ``revision``. ``verdict`` is the authoritative verdict (the final reviewer's after a
    repair). ``worktree`` and ``evidence_dir`` are absolute paths, so ``factory receipt
    verify`` can re-derive the candidate. ``route_evidence`` is what the route itself
    recorded (on the rehearsal route: the scripted model's log of every request it served,
    ``factory.rehearsal-log/1``, SPEC P-5); absent on the subscription route.
    ``worktree_creation`` is present exactly when factory created the worktree (``--repo``).
    ``factory_process`` identifies the process that wrote the receipt, so a ``running``
    reservation left by a killed factory reads as abandoned.
    ``trace_id`` is the OpenTelemetry trace id (32 lowercase hex digits) of the run's spans
    when ``--otel-endpoint`` was given, so a trace and its receipt can be joined.
    """

    schema_id: Literal["factory.agent-receipt/1"] = Field(default=RECEIPT_SCHEMA, alias="schema")
    status: Status
    exit_code: int | None
    execution: str
    route: Literal["subscription", "rehearsal", "api"]
    factory_version: str
    task: str
    worktree: str
    evidence_dir: str
    timeout_ms: int
    base: BaseRecord | None
    phases: list[PhaseRecord]
    candidate: Candidates
    verdict: VerdictName | None
    error: ErrorRecord | None
    residuals: list[str]
    timings: Timings
    route_evidence: EvidenceRef | None = None
    factory_process: FactoryProcess | None = None
    trace_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")
    worktree_creation: WorktreeCreation | None = None
    revision: str | None = None

    def to_json_value(self) -> dict[str, Any]:
        """The JSON value; optional fields added later (:data:`OMITTED_WHEN_ABSENT`) are
        left out when absent, so receipts written before they existed keep their exact
        bytes and revision."""
        value = super().to_json_value()
        for key in OMITTED_WHEN_ABSENT:
            if value.get(key) is None:
                value.pop(key, None)
        return value

    def body_value(self) -> dict[str, Any]:
        """The JSON value the revision is computed over: everything but ``revision``."""
        value = self.to_json_value()
        value.pop("revision", None)
        return value

    def compute_revision(self) -> str:
        """``sha256:<hex>`` of the canonical body with tag :data:`RECEIPT_TAG`."""
        return digest(RECEIPT_TAG, self.body_value())

    def closed(self) -> AgentReceipt:
        """A copy with ``revision`` set to :meth:`compute_revision`."""
        return self.model_copy(update={"revision": self.compute_revision()})

    def final_candidate(self) -> CandidateRecord | None:
        """The candidate the authoritative verdict judged: repaired if any, else initial."""
        return self.candidate.repaired or self.candidate.initial


def receipt_bytes(receipt: AgentReceipt) -> bytes:
    """The exact bytes written to the receipt file: canonical JSON plus LF."""
    return receipt.canonical() + b"\n"
