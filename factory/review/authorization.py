"""The maintainer authorization binding (SPEC R): exact bytes a person writes to let an
escalated lineage be recovered, or a repair ceremony run.

The file is six LF-terminated lines and nothing else — no CR, no blank line, no trailing
text, UTF-8::

    factory.review-recovery-authorization/1
    predecessor_lineage=<lineage id>
    predecessor_revision=<sha256:… of the record replaced or quarantined>
    target_identity=<sha256:… of what the new authority will cover>
    actor=<name>
    reason=<text>

:func:`binding_text` builds the expected bytes; :func:`check_binding` compares a given file
with them byte for byte and says which line differs. Free text ("approved by Ana") is never
accepted: the binding names exactly which record, which target, who and why, so it cannot
be replayed onto another lineage or a later revision. It proves consistency, not identity:
anyone who can write the file can write it (SPEC §9).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from factory.review.errors import ReviewInputInvalid
from factory.review.gate_errors import AuthorizationRefused

AUTHORIZATION_SCHEMA: Final = "factory.review-recovery-authorization/1"
AUTHORIZATION_LIMIT = 4096
FIELDS: Final = (
    "predecessor_lineage",
    "predecessor_revision",
    "target_identity",
    "actor",
    "reason",
)


def field_problem(name: str, value: str) -> str | None:
    """Why ``value`` cannot stand in a binding line (None when it can)."""
    if not value.strip():
        return f"{name} is empty"
    if value != value.strip():
        return f"{name} has leading or trailing white space"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return f"{name} contains a control character (one line, no CR/LF/TAB)"
    if len(value.encode("utf-8", "surrogatepass")) > 512:
        return f"{name} is longer than 512 bytes"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{name} is not valid UTF-8 text"
    return None


def binding_text(
    predecessor_lineage: str,
    predecessor_revision: str,
    target_identity: str,
    actor: str,
    reason: str,
) -> bytes:
    """The exact bytes of the authorization for these values."""
    values = (predecessor_lineage, predecessor_revision, target_identity, actor, reason)
    lines = [AUTHORIZATION_SCHEMA, *(f"{k}={v}" for k, v in zip(FIELDS, values, strict=True))]
    return ("\n".join(lines) + "\n").encode("utf-8")


def check_binding(given: bytes, expected: bytes) -> str | None:
    """Why ``given`` is not exactly ``expected`` (None when it is)."""
    if given == expected:
        return None
    if len(given) > AUTHORIZATION_LIMIT:
        return f"the authorization is larger than {AUTHORIZATION_LIMIT} bytes"
    if b"\r" in given:
        return "the authorization contains CR: lines end with LF only"
    if not given.endswith(b"\n"):
        return "the authorization's last line does not end with LF"
    try:
        lines = given.decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError:
        return "the authorization is not UTF-8 text"
    want = expected.decode("utf-8").split("\n")[:-1]
    if len(lines) != len(want):
        return f"the authorization has {len(lines)} lines; it needs exactly {len(want)}"
    for i, (got, exp) in enumerate(zip(lines, want, strict=True)):
        if got != exp:
            name = exp.split("=", 1)[0] if i else "the first line"
            return f"line {i + 1} ({name}) does not match the binding for this action"
    return "the authorization does not match the binding for this action"


def require_authorization(path: Path | None, expected: bytes, action: str, again: str) -> bytes:
    """The authorization file's bytes when they are exactly ``expected``.

    Raises:
        AuthorizationRefused: no file, or a file that is not the binding (the refusal
            carries the expected text).
        ReviewInputInvalid: the file cannot be read.
    """
    if path is None:
        raise AuthorizationRefused(
            f"{action} needs --maintainer-authorization FILE with the exact binding "
            "(printed as expected_authorization)",
            expected=expected,
            next=(again,),
        )
    try:
        given = path.read_bytes()[: AUTHORIZATION_LIMIT + 1]
    except OSError as exc:
        raise ReviewInputInvalid(
            f"--maintainer-authorization cannot be read ({exc.strerror})"
        ) from None
    problem = check_binding(given, expected)
    if problem is not None:
        raise AuthorizationRefused(problem, expected=expected, next=(again,))
    return given
