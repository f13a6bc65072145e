"""``operator publish``: a ``PUBLISH_CANDIDATE`` grant for commit, leased push and PR.

``--receipt`` is either an agent receipt (``factory.agent-receipt/1``) or the operator
receipt of an ``operator run`` (``factory.operator-receipt/1``, executed): then the agent
receipt it binds is published, and the pull request says ``Closes #N`` for its issue.

Observation (no effect): verify the agent receipt (evidence, revision, and the candidate
re-derived from the live worktree), read the remote's URL and the git identity, the base
branch, and what each publication step would find (:func:`factory.operator.adapter.observe`).
The pure :func:`factory.operator.publication.publish_intent` builds the intent; injected
preconditions (the CLI always injects ``gate-not-accepted``) run inside it.

The decision gate (SPEC X-1): an injected :class:`~factory.operator.gateref.GateLookup`
finds the accepted run for the receipt's candidate at every observation; the first intent
built pins the gate head (a later observation at another head is ``gate-head-stale``) and
binds the run into the receipt, exporting its runpack beside OUT. ``factory publish``
injects its gate step as ``before`` (the flow's admission, stage ``gate``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factory.agent.receipt_once import VerifiedReceipt
from factory.agent.verify import (
    RECEIPT_LIMIT,
    LoadedReceipt,
    parse_receipt,
    read_receipt,
    verify_loaded,
)
from factory.display import inert
from factory.documents.canonical import sha256_hex
from factory.errors import Code, FactoryError, Refused
from factory.operator import adapter, dialog
from factory.operator.forge_client import Forge
from factory.operator.gateref import GateLookup
from factory.operator.grant import SignedGrant
from factory.operator.intent import PublishIntent, RemoteRef, RunIntent
from factory.operator.publication import Precondition, PublishInputs, publish_intent
from factory.operator.receipt import (
    Command,
    ErrorRecord,
    GateRecord,
    PublishResult,
    PullRequestRef,
)
from factory.operator.session import INTENT_STALE, Outcome, StaleIntent
from factory.operator.verify import integrity_ok, verify_operator_receipt


class SourceRefused(Refused):
    """``--receipt`` is not something a publication can stand on (exit 2)."""


_SOURCE = "pass an agent receipt, or the receipt of an executed 'operator run'"
OPERATOR_RECEIPT_NOT_EXECUTED = SourceRefused.define("operator-receipt-not-executed", _SOURCE)
PUBLISH_RECEIPT_INVALID = SourceRefused.define("publish-receipt-invalid", _SOURCE)
PUBLISH_RECEIPT_MISSING = SourceRefused.define("publish-receipt-missing", _SOURCE)
RECEIPT_REPOSITORY_MISMATCH = SourceRefused.define(
    "receipt-repository-mismatch", "pass the --repository the run was for"
)
GATE_HEAD_STALE = StaleIntent.define(
    "gate-head-stale",
    "nothing was spent; someone accepted more on the gate run: review the new head and "
    "authorize again",
)


@dataclass(frozen=True, slots=True)
class Source:
    """The agent receipt to publish and, when it came from ``operator run``, its issue;
    ``data``: the bytes already read when ``--receipt`` is the agent receipt itself."""

    agent_path: Path
    issue: int | None
    data: bytes | None = None


def resolve_source(path: Path, repository: str) -> Source:
    """Follow an operator receipt to its agent receipt; an agent receipt stands alone."""
    try:
        data = path.read_bytes()
        value = json.loads(data)
    except FileNotFoundError:
        raise PUBLISH_RECEIPT_MISSING("--receipt does not exist") from None
    except (OSError, ValueError, RecursionError):
        raise PUBLISH_RECEIPT_INVALID("--receipt is not a JSON receipt") from None
    if not isinstance(value, dict) or value.get("schema") != "factory.operator-receipt/1":
        return Source(Path(os.path.abspath(path)), None, data)
    report = verify_operator_receipt(path)
    if not report["ok"] or value.get("command") != "run" or value.get("status") != "executed":
        raise OPERATOR_RECEIPT_NOT_EXECUTED(
            "--receipt is an operator receipt that is not a verified, executed 'operator run'"
        )
    intent = value["intent"]
    if intent.get("repository") != repository:
        raise RECEIPT_REPOSITORY_MISMATCH(
            "the operator run was for another repository than --repository"
        )
    agent = Path(os.path.abspath(path)).parent / value["agent_run"]["path"]
    return Source(agent, int(intent["issue"]))


def _loaded(source: Source) -> LoadedReceipt:
    """The agent receipt of ``source``, from the bytes already read when there are some
    (a symbolic link or an oversized file is read again, to be refused as always)."""
    path, data = source.agent_path, source.data
    if data is None or os.path.islink(path) or len(data) > RECEIPT_LIMIT:
        return read_receipt(path)
    return LoadedReceipt(path, parse_receipt(data), data)


def verified_source(path: Path, repository: str) -> tuple[Source, VerifiedReceipt]:
    """``--receipt`` followed to its agent receipt, read once and verified once: the value
    one ``factory publish`` passes on (issue 25)."""
    source = resolve_source(path, repository)
    loaded = _loaded(source)
    return source, VerifiedReceipt(loaded, verify_loaded(loaded))


def _common_dir_of(root: Path) -> Path | None:
    """The git common dir of the receipt's worktree ``root`` (None when git cannot tell)."""
    from factory.gitio.run import try_git

    code, out = try_git(root, ["rev-parse", "--path-format=absolute", "--git-common-dir"])
    return Path(out.decode("utf-8", "surrogateescape").strip()) if code == 0 else None


@dataclass
class PublishFlow:
    """The :class:`~factory.operator.session.Flow` of ``operator publish``."""

    forge: Forge
    repository: str
    receipt: Path
    remote: str
    base: str | None
    preconditions: Sequence[Precondition] = ()
    gate: GateLookup | None = None
    export_to: Path | None = None  # where the gate run's runpack is exported (beside OUT)
    before: Callable[[], None] | None = None  # the flow's admission (factory publish: gate)
    gate_head: str | None = None  # pinned once an intent was built (or by factory publish)
    gate_record: GateRecord | None = None
    command: Command = "publish"
    stale_code: Code[StaleIntent] = INTENT_STALE
    #: The receipt as this command read and verified it (once; ``factory publish`` passes
    #: the value it already holds). The re-observation after the signature reads afresh.
    held: tuple[Source, VerifiedReceipt] | None = None
    observation: adapter.Observation | None = field(default=None, init=False)
    root: Path | None = field(default=None, init=False)
    lock: int | None = field(default=None, init=False)

    def admit(self) -> None:
        """The repository's publish lock first (another publish running: refused before
        any prompt, key or forge call), then the flow's own admission."""
        try:
            _, held = self._held()
            common = _common_dir_of(adapter.worktree_root(held.loaded.receipt.worktree))
        except FactoryError:
            common = None  # observe refuses the receipt by name
        if common is not None:
            from factory.operator.publish_lock import hold

            self.lock = hold(common)
        if self.before is not None:
            self.before()

    def close(self) -> None:
        """Release the publish lock (the command is over)."""
        from factory.operator.publish_lock import release

        release(self.lock)
        self.lock = None

    def _held(self) -> tuple[Source, VerifiedReceipt]:
        if self.held is None:
            self.held = verified_source(self.receipt, self.repository)
        return self.held

    def _inputs(self) -> PublishInputs:
        # The first observation uses the receipt this command holds; a later one is the
        # re-check before the grant is spent (a time-of-check/time-of-use guard): it reads
        # and verifies afresh, so a receipt or worktree changed in between is seen.
        first = self.observation is None
        source, held = self._held() if first else verified_source(self.receipt, self.repository)
        report, receipt, data = held.report_json(), held.loaded.receipt, held.loaded.data
        self.root = adapter.worktree_root(receipt.worktree)
        candidate = report.get("candidate", {})
        live = candidate.get("observed") if candidate.get("checked") else None
        name, email = adapter.git_identity(self.root)
        base = self.base if self.base is not None else self.forge.default_branch(self.repository)
        finding = None
        if self.gate is not None:
            finding = self.gate.find(source.agent_path, receipt)
            ref = finding.ref
            if self.gate_head is not None and ref is not None and ref.head != self.gate_head:
                raise GATE_HEAD_STALE(
                    f"gate run {ref.run} moved on from the head that was accepted "
                    "for this publication (someone accepted more evidence in between)"
                )
        return PublishInputs(
            receipt=receipt,
            receipt_path=os.fspath(source.agent_path),
            receipt_sha256=sha256_hex(data),
            verified=integrity_ok(report),
            live_identity=live,
            forge=self.forge.base_url,
            repository=self.repository,
            issue=source.issue,
            remote=RemoteRef(name=self.remote, url=adapter.remote_url(self.root, self.remote)),
            base_branch=base,
            author_name=name,
            author_email=email,
            gate=finding,
        )

    def observe(self) -> PublishIntent:
        intent = publish_intent(self._inputs(), self.preconditions)
        assert self.root is not None
        if intent.gate is not None and self.gate is not None:
            self.gate_head = intent.gate.head
            if self.gate_record is None or self.gate_record.head != intent.gate.head:
                self.gate_record = self.gate.bind(intent.gate, self.export_to)
        seen = adapter.observe(self.root, intent, self.forge)
        if self.observation is not None and seen != self.observation:
            raise INTENT_STALE("the remote or the forge changed after the intent was shown")
        self.observation = seen
        return intent

    def screen(self, intent: RunIntent | PublishIntent) -> list[str]:
        assert isinstance(intent, PublishIntent) and self.observation is not None
        seen = self.observation
        facts = [
            dialog.field("commit to create", seen.commit),
            dialog.field(
                "local branch",
                "absent, will be created" if seen.local == "absent" else "names it, reused",
            ),
            dialog.field(
                "remote branch",
                "absent, will be pushed (lease: must not exist)"
                if seen.remote == "absent"
                else "already names it, reused",
            ),
        ]
        if seen.pull_request is None:
            facts.append(dialog.field("pull request", "none for the branch, will be opened"))
        else:
            facts.append(
                dialog.field(
                    "pull request", f"#{seen.pull_request.number} is identical and open, reused"
                )
            )
            facts += dialog.untrusted("pull request URL", seen.pull_request.url)
        return dialog.render_publish(intent, facts)

    def execute(self, intent: RunIntent | PublishIntent, grant: SignedGrant) -> Outcome:
        assert isinstance(intent, PublishIntent)
        assert self.root is not None and self.observation is not None
        result = PublishResult(
            commit=self.observation.commit,
            branch=intent.branch,
            local_branch="not-run",
            push="not-run",
            pull_request=None,
        )
        try:
            local = adapter.commit(self.root, intent, self.observation.commit)
            result = result.model_copy(update={"local_branch": local})
            pushed = adapter.push(self.root, intent, self.observation.commit)
            result = result.model_copy(update={"push": pushed})
            pr, reused = adapter.open_pull_request(self.forge, intent, self.observation.commit)
            ref = PullRequestRef(number=pr.number, url=pr.url, reused=reused)
            result = result.model_copy(update={"pull_request": ref})
        except KeyboardInterrupt:
            return Outcome(status="interrupted", publication=result)
        except FactoryError as exc:
            error = ErrorRecord(code=exc.code, message=exc.message)
            return Outcome(status="execution-failed", error=error, publication=result)
        return Outcome(status="executed", publication=result)


def describe(result: PublishResult) -> str:
    """One human line about a publication (inert)."""
    pr = result.pull_request
    where = f"pull request #{pr.number} {pr.url}" if pr else "no pull request"
    return inert(f"published {result.commit} on {result.branch}: {where}")
