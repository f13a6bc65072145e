"""``factory operator verify OUT``: check an operator receipt offline (SPEC O-3).

Checks, each named in the report:

* ``canonical`` / ``revision`` — the file is exactly the canonical bytes of a
  ``factory.operator-receipt/1`` whose revision recomputes;
* ``consistent`` — status, exit code, refusal, error and grant agree with each other;
* ``intent`` — the intent's revision recomputes from its body;
* ``grant`` — the signature verifies with the public key (``--public-key`` when given,
  which must equal the key recorded; otherwise the recorded key, reported as
  ``receipt-embedded``: consistency, not authorship), and its revision, action,
  repository and scope equal the intent's;
* ``ledger`` — the entry exists, hashes to what the receipt recorded, and names this grant;
* ``agent_receipt`` — the bound agent receipt (``operator run``: beside OUT; ``publish``:
  the intent's) has the recorded SHA-256 and revision, and ``factory receipt verify``
  passes on its evidence and revision (the live candidate re-derivation is reported but,
  since a worktree may legitimately move on, not gating);
* ``commit`` (``publish``) — the recorded commit id is the git object id of the commit the
  intent determines (recomputed here, no repository needed).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from factory.documents.canonical import sha256_hex
from factory.errors import IntegrityFailure, UsageError
from factory.models import parse_model
from factory.operator.adapter import commit_bytes
from factory.operator.grant import action_of, scope_of
from factory.operator.intent import PublishIntent, intent_revision_ok
from factory.operator.keys import fingerprint, load_public
from factory.operator.ledger import entry_name, grant_digest, idempotency_key, read_entry
from factory.operator.receipt import OperatorReceipt, receipt_bytes

VERIFY_SCHEMA: Final = "factory.operator-receipt-verification/1"
LIMIT: Final = 16 << 20
_EXIT = {
    "refused": {1, 2},
    "held": {3},
    "executed": {0},
    "execution-failed": {1, 4},
    "interrupted": {130},
}


class OperatorReceiptUnreadable(IntegrityFailure):
    """Not a ``factory.operator-receipt/1`` document (exit 4)."""


OPERATOR_RECEIPT_INVALID = OperatorReceiptUnreadable.define(
    "operator-receipt-invalid", "pass a receipt written by factory operator, unedited", default=True
)
OPERATOR_RECEIPT_MISSING = UsageError.define(
    "operator-receipt-missing", "pass the --out path of an operator run or publish"
)


def load(path: Path) -> tuple[OperatorReceipt, bytes]:
    """Parse the receipt at ``path``; return the model and the exact bytes."""
    if not os.path.lexists(path):
        raise OPERATOR_RECEIPT_MISSING("the operator receipt does not exist")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            data = os.read(fd, LIMIT)
        finally:
            os.close(fd)
        value = json.loads(data)
    except (OSError, ValueError, RecursionError) as exc:  # nested too deeply: not JSON we read
        raise OperatorReceiptUnreadable("the operator receipt is not readable JSON") from exc
    return parse_model(
        OperatorReceipt, value, code=OPERATOR_RECEIPT_INVALID, what="the receipt"
    ), data


def git_object_id(kind: str, data: bytes) -> str:
    """The SHA-1 git object id of ``data`` as an object of ``kind``."""
    header = f"{kind} {len(data)}\0".encode("ascii")
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


def _consistency(receipt: OperatorReceipt) -> list[str]:
    problems = []
    if receipt.status == "reserved":
        problems.append("not-terminal")
        return problems
    allowed = set(_EXIT[receipt.status])
    gate_stop = receipt.refusal is not None and receipt.refusal.stage == "gate"
    if receipt.status == "refused" and gate_stop:
        allowed.add(4)  # a gate condition that failed: a typed failure, nothing spent
    if receipt.exit_code not in allowed:
        problems.append("exit-code-does-not-match-status")
    if receipt.status in ("refused", "held") and (
        receipt.refusal is None or receipt.grant is not None
    ):
        problems.append("refusal-without-stage-or-with-grant")
    if receipt.status == "held" and (not gate_stop or receipt.gate is None):
        problems.append("held-without-gate")
    if receipt.status in ("executed", "execution-failed") and receipt.grant is None:
        problems.append("action-without-grant")
    if receipt.status == "execution-failed" and receipt.error is None:
        problems.append("failure-without-error")
    if receipt.status == "executed" and receipt.intent is None:
        problems.append("executed-without-intent")
    return problems


def _key(receipt: OperatorReceipt, given: Path | None) -> tuple[Ed25519PublicKey | None, str]:
    assert receipt.grant is not None
    try:
        recorded = serialization.load_pem_public_key(receipt.grant.public_key.encode("ascii"))
    except ValueError:
        recorded = None
    if given is None:
        ok = isinstance(recorded, Ed25519PublicKey)
        return (recorded if ok else None), "receipt-embedded"  # type: ignore[return-value]
    key = load_public(given)
    return (key if recorded == key else None), "given"


def check_grant(receipt: OperatorReceipt, public_key: Path | None) -> dict[str, Any]:
    """The grant's signature and scope against the intent."""
    grant = receipt.grant
    if grant is None or receipt.intent is None:
        return {"present": False, "ok": receipt.status in ("refused", "held", "interrupted")}
    key, anchor = _key(receipt, public_key)
    signed = grant.signed
    inner = signed.grant
    signature_ok = False
    if key is not None and inner.key == fingerprint(key):
        raw = base64.urlsafe_b64decode(signed.signature + "=" * (-len(signed.signature) % 4))
        try:
            key.verify(raw, inner.signed_message())
            signature_ok = True
        except InvalidSignature:
            pass
    intent = receipt.intent
    scope_ok = (
        inner.intent_revision == intent.intent_revision
        and inner.action == action_of(intent)
        and inner.repository == intent.repository
        and inner.scope == scope_of(intent)
    )
    return {
        "present": True,
        "key_anchor": anchor,
        "key_matches": key is not None,
        "signature": signature_ok,
        "scope": scope_ok,
        "ok": signature_ok and scope_ok,
    }


def check_ledger(receipt: OperatorReceipt, ledger: Path | None) -> dict[str, Any]:
    """The ledger entry exists, hashes as recorded, and names this grant."""
    grant = receipt.grant
    if grant is None:
        return {"present": False, "ok": receipt.status in ("refused", "held", "interrupted")}
    signed = grant.signed
    folder = ledger if ledger is not None else Path(grant.ledger.folder)
    path = folder / entry_name(signed.grant.grant_id)
    entry = read_entry(path)
    problem = None
    if grant.ledger.entry != path.name:
        problem = "entry-name-mismatch"
    elif entry is None:
        problem = "entry-missing"
    elif sha256_hex(path.read_bytes()) != grant.ledger.sha256:
        problem = "entry-bytes-changed"
    elif (
        entry.grant_id != signed.grant.grant_id
        or entry.grant_digest != grant_digest(signed)
        or entry.intent_revision != signed.grant.intent_revision
        or entry.idempotency_key != idempotency_key(signed)
    ):
        problem = "entry-names-another-grant"
    return {"present": True, "entry": path.name, "problem": problem, "ok": problem is None}


def _agent_path(receipt: OperatorReceipt, out: Path) -> tuple[Path, str | None, str | None]:
    if receipt.agent_run is not None:
        ref = receipt.agent_run
        return Path(os.path.abspath(out)).parent / ref.path, ref.sha256, ref.revision
    assert isinstance(receipt.intent, PublishIntent)
    ref2 = receipt.intent.receipt
    return Path(ref2.path), ref2.sha256, ref2.revision


def integrity_ok(report: dict[str, Any]) -> bool:
    """Whether ``factory receipt verify``'s report says the receipt itself holds: terminal,
    exact bytes, revision, evidence, no contradiction (the live candidate is separate)."""
    return bool(
        report["terminal"]
        and report["revision"]["ok"]
        and report["canonical_bytes"]
        and all(e["ok"] for e in report["evidence"])
        and not report["consistency_problems"]
    )


def check_agent_receipt(receipt: OperatorReceipt, out: Path) -> dict[str, Any]:
    """The bound agent receipt still has its recorded bytes and verifies."""
    from factory.agent.verify import verify_json as verify_agent

    if receipt.agent_run is None and not isinstance(receipt.intent, PublishIntent):
        return {"present": False, "ok": True}
    if receipt.agent_run is not None and receipt.agent_run.sha256 is None:
        return {"present": False, "ok": receipt.status != "executed"}
    path, sha, revision = _agent_path(receipt, out)
    try:
        data = path.read_bytes()
    except OSError:
        return {"present": True, "problem": "missing", "ok": False}
    if sha256_hex(data) != sha:
        return {"present": True, "problem": "bytes-changed", "ok": False}
    report = verify_agent(path)
    ok = integrity_ok(report) and report["revision"]["stored"] == revision
    return {
        "present": True,
        "problem": None if ok else "does-not-verify",
        "candidate_still_matches": report["candidate"].get("still_matches"),
        "ok": ok,
    }


def check_commit(receipt: OperatorReceipt) -> dict[str, Any]:
    """A publication's commit id is the one its intent determines."""
    intent, pub = receipt.intent, receipt.publication
    if not isinstance(intent, PublishIntent) or pub is None:
        return {"present": False, "ok": True}
    cand = intent.candidate
    expected = git_object_id(
        "commit", commit_bytes(cand.candidate_tree, cand.base_commit, intent.commit)
    )
    ok = pub.commit == expected and pub.branch == intent.branch
    return {"present": True, "expected": expected, "ok": ok}


def verify_operator_receipt(
    path: Path, *, public_key: Path | None = None, ledger: Path | None = None
) -> dict[str, Any]:
    """Every check of the module docstring, as a JSON value; ``ok`` when all pass."""
    receipt, data = load(path)
    revision_ok = receipt.revision == receipt.compute_revision()
    canonical = data == receipt_bytes(receipt)
    problems = _consistency(receipt)
    intent_ok = receipt.intent is None or intent_revision_ok(receipt.intent)
    checks = {
        "grant": check_grant(receipt, public_key),
        "ledger": check_ledger(receipt, ledger),
        "agent_receipt": check_agent_receipt(receipt, path),
        "commit": check_commit(receipt),
    }
    ok = (
        revision_ok
        and canonical
        and not problems
        and intent_ok
        and all(c["ok"] for c in checks.values())
    )
    return {
        "schema": VERIFY_SCHEMA,
        "receipt": os.fspath(path),
        "command": receipt.command,
        "status": receipt.status,
        "revision": {"ok": revision_ok, "stored": receipt.revision},
        "canonical_bytes": canonical,
        "consistency_problems": problems,
        "intent": {"ok": intent_ok},
        **checks,
        "ok": ok,
    }
