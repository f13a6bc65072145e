"""The single-use operator grant ``factory.operator-grant/1`` (SPEC O-3).

A grant authorizes exactly one action on one intent revision. It is signed in memory with
the operator's Ed25519 key over ``GRANT_TAG || 0x00 || canonical_bytes(grant)`` — the same
domain separation as every digest (SPEC F-4), so grant bytes can never be replayed as
another document's signature input.

:func:`consume` is the only way a grant turns into authority. In order, it checks:

1. exact keys: the value parses as a :class:`SignedGrant` (nothing missing, nothing extra);
2. scope: revision, action, repository and scope equal the intent's;
3. time: the clock is sane (not before :data:`CLOCK_FLOOR`, not before the issue time minus
   :data:`CLOCK_SKEW_S`), the lifetime is 1–900 s, and the grant has not expired;
4. the Ed25519 signature against the public key the caller trusts;
5. a ledger claim named by the grant id's digest, created with ``O_EXCL`` (a second use is
   ``grant-consumed``).

Every refusal is raised before the ledger entry exists, so nothing was spent (exit 2).
"""

from __future__ import annotations

import base64
import datetime as _dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import Field

from factory.documents.canonical import canonical_bytes
from factory.errors import Refused
from factory.models import StrictModel, parse_model
from factory.operator.intent import PublishIntent, RunIntent
from factory.operator.keys import fingerprint

GRANT_SCHEMA: Final = "factory.operator-grant/1"
GRANT_TAG: Final = "factory.operator-grant/1"
TTL_DEFAULT_S: Final = 120
TTL_MIN_S: Final = 1
TTL_MAX_S: Final = 900
CLOCK_SKEW_S: Final = 5
CLOCK_FLOOR: Final = _dt.datetime(2025, 1, 1, tzinfo=_dt.UTC)

Action = Literal["FACTORY_RUN", "PUBLISH_CANDIDATE"]
Clock = Callable[[], _dt.datetime]


class GrantRefused(Refused):
    """The grant cannot be consumed; nothing was spent (exit 2)."""


_AGAIN = "run the command again to authorize anew: nothing was spent"
CLOCK_NOT_SANE = GrantRefused.define("clock-not-sane", "fix the system clock, then authorize again")
GRANT_EXPIRED = GrantRefused.define("grant-expired", _AGAIN)
GRANT_MALFORMED = GrantRefused.define("grant-malformed", _AGAIN)
GRANT_SCOPE_MISMATCH = GrantRefused.define("grant-scope-mismatch", _AGAIN)
GRANT_SIGNATURE_INVALID = GrantRefused.define(
    "grant-signature-invalid", "check --public-key is the pair of --private-key"
)
GRANT_TTL_INVALID = GrantRefused.define("grant-ttl-invalid", _AGAIN)
TTL_OUT_OF_RANGE = GrantRefused.define("ttl-out-of-range", "pass --ttl-seconds between 1 and 900")


class GrantScope(StrictModel):
    """What the grant covers beyond the intent revision: the fields an operator was shown.

    ``issue``/``snapshot_revision`` for a run; ``receipt_revision``/``candidate_identity``/
    ``branch`` and the accepted gate run and head (``gate_run``/``gate_head``) for a
    publication (``None`` where they do not apply).
    """

    intent_schema: str
    repository: str
    issue: int | None
    snapshot_revision: str | None
    receipt_revision: str | None
    candidate_identity: str | None
    branch: str | None
    gate_run: str | None
    gate_head: str | None


def scope_of(intent: RunIntent | PublishIntent) -> GrantScope:
    """The scope a grant for ``intent`` must carry (pure)."""
    if isinstance(intent, RunIntent):
        return GrantScope(
            intent_schema=intent.schema_id,
            repository=intent.repository,
            issue=intent.issue,
            snapshot_revision=intent.snapshot_revision,
            receipt_revision=None,
            candidate_identity=None,
            branch=None,
            gate_run=None,
            gate_head=None,
        )
    return GrantScope(
        intent_schema=intent.schema_id,
        repository=intent.repository,
        issue=intent.issue,
        snapshot_revision=None,
        receipt_revision=intent.receipt.revision,
        candidate_identity=intent.candidate.identity,
        branch=intent.branch,
        gate_run=None if intent.gate is None else intent.gate.run,
        gate_head=None if intent.gate is None else intent.gate.head,
    )


def action_of(intent: RunIntent | PublishIntent) -> Action:
    """The grant action an intent requires."""
    return "FACTORY_RUN" if isinstance(intent, RunIntent) else "PUBLISH_CANDIDATE"


@dataclass(frozen=True, slots=True)
class Expected:
    """What a grant must cover: one intent revision, its action, repository and scope."""

    intent_revision: str
    action: Action
    repository: str
    scope: GrantScope

    @classmethod
    def of(cls, intent: RunIntent | PublishIntent) -> Expected:
        return cls(intent.intent_revision, action_of(intent), intent.repository, scope_of(intent))


class Grant(StrictModel):
    """``factory.operator-grant/1``: one action on one intent revision, until ``expires_at``."""

    schema_id: Literal["factory.operator-grant/1"] = Field(default=GRANT_SCHEMA, alias="schema")
    grant_id: str
    intent_revision: str
    action: Action
    repository: str
    scope: GrantScope
    key: str  # fingerprint of the signing public key (sha256 of its raw bytes)
    issued_at: str
    expires_at: str

    def signed_message(self) -> bytes:
        """The exact bytes the signature covers."""
        return GRANT_TAG.encode("utf-8") + b"\x00" + canonical_bytes(self.to_json_value())


class SignedGrant(StrictModel):
    """A grant and its base64url (unpadded) Ed25519 signature."""

    grant: Grant
    signature: str


def utc_text(moment: _dt.datetime) -> str:
    """RFC 3339 UTC with seconds, ``Z`` suffix."""
    return moment.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc(text: str) -> _dt.datetime:
    """Parse :func:`utc_text` output (exactly that shape)."""
    try:
        return _dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    except ValueError:
        raise GRANT_MALFORMED("the grant's times are not RFC 3339 UTC") from None


def system_clock() -> _dt.datetime:
    """The real clock (UTC)."""
    return _dt.datetime.now(_dt.UTC)


def check_ttl(ttl_s: int) -> int:
    """``--ttl-seconds`` within 1–900, else ``ttl-out-of-range`` (exit 2)."""
    if not TTL_MIN_S <= ttl_s <= TTL_MAX_S:
        raise TTL_OUT_OF_RANGE(f"--ttl-seconds must be between {TTL_MIN_S} and {TTL_MAX_S}")
    return ttl_s


def sign(
    key: Ed25519PrivateKey, expected: Expected, *, ttl_s: int, clock: Clock = system_clock
) -> SignedGrant:
    """A fresh grant for one use, signed in memory."""
    now = clock()
    grant = Grant(
        grant_id=f"factory-grant-{uuid.uuid4().hex}",
        intent_revision=expected.intent_revision,
        action=expected.action,
        repository=expected.repository,
        scope=expected.scope,
        key=fingerprint(key.public_key()),
        issued_at=utc_text(now),
        expires_at=utc_text(now + _dt.timedelta(seconds=check_ttl(ttl_s))),
    )
    raw = key.sign(grant.signed_message())
    return SignedGrant(grant=grant, signature=base64.urlsafe_b64encode(raw).rstrip(b"=").decode())


def _signature_bytes(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 64 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text:
        raise GRANT_MALFORMED("the grant's signature is not canonical base64url")
    return raw


def check_time(grant: Grant, now: _dt.datetime) -> None:
    """Step 3 of :func:`consume`: a sane clock, a bounded lifetime, not expired."""
    issued, expires = parse_utc(grant.issued_at), parse_utc(grant.expires_at)
    if now < CLOCK_FLOOR or now < issued - _dt.timedelta(seconds=CLOCK_SKEW_S):
        raise CLOCK_NOT_SANE("the clock reads earlier than the grant was issued (or before 2025)")
    lifetime = (expires - issued).total_seconds()
    if not TTL_MIN_S <= lifetime <= TTL_MAX_S:
        raise GRANT_TTL_INVALID("the grant's lifetime is outside 1–900 s")
    if now >= expires:
        raise GRANT_EXPIRED("the grant expired before it was used")


def check_grant(
    value: Any, expected: Expected, public_key: Ed25519PublicKey, clock: Clock = system_clock
) -> SignedGrant:
    """Steps 1–4 of :func:`consume` (everything but the ledger claim)."""
    signed = parse_model(SignedGrant, value, code=GRANT_MALFORMED, what="the grant")
    grant = signed.grant
    if (
        grant.intent_revision != expected.intent_revision
        or grant.action != expected.action
        or grant.repository != expected.repository
        or grant.scope != expected.scope
    ):
        raise GRANT_SCOPE_MISMATCH(
            "the grant covers a different intent, action, repository or scope"
        )
    check_time(grant, clock())
    if grant.key != fingerprint(public_key):
        raise GRANT_SIGNATURE_INVALID("the grant names a different signing key")
    try:
        public_key.verify(_signature_bytes(signed.signature), grant.signed_message())
    except InvalidSignature:
        raise GRANT_SIGNATURE_INVALID(
            "the grant's signature does not verify with --public-key"
        ) from None
    return signed
