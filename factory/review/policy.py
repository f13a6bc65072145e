"""The review policy: which changed files are goldens (generated outputs) (SPEC R).

A golden stays in the candidate's identity — generated output belongs to the delivery —
but its lines are not *authored* lines, so regenerating a 5,000-line fixture cannot mint a
200-line correction budget. The policy's raw bytes are hashed (``policy_hash``) and frozen
in the lineage: a later policy cannot re-grade an old review.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, ValidationError

from factory.documents.canonical import canonical_bytes_plain, tagged_sha256
from factory.documents.files import TooLarge, read_document
from factory.models import StrictModel, describe_validation_error
from factory.review.documents import POLICY_TAG, strict_json
from factory.review.errors import POLICY_INVALID, ReviewInputInvalid

POLICY_SCHEMA: Final = "factory.review-policy/1"
POLICY_LIMIT = 64 * 1024
DEFAULT_GOLDEN_GLOBS = ("**/testdata/golden/*.golden",)


def _glob(text: str) -> str:
    parts = text.split("/")
    if not text or text.startswith("/") or "" in parts or any(p in (".", "..") for p in parts):
        raise ValueError("a golden glob is a relative '/'-separated pattern, e.g. 'a/**/*.golden'")
    if len(text) > 500:
        raise ValueError("a golden glob is at most 500 characters")
    return text


class Policy(StrictModel):
    """``factory.review-policy/1``: ``golden_globs`` (``*``/``?``/``[..]`` within one path
    segment, ``**`` for any number of segments)."""

    schema_id: Literal["factory.review-policy/1"] = Field(alias="schema")
    golden_globs: Annotated[
        tuple[Annotated[str, AfterValidator(_glob)], ...], Field(max_length=100)
    ]


def _match(pattern: list[str], path: list[str]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], head) and _match(rest, path[1:])


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (``/``-separated, relative) matches ``pattern``."""
    return _match(pattern.split("/"), path.split("/"))


class LoadedPolicy:
    """A policy with the exact bytes it was read from and their hash."""

    def __init__(self, policy: Policy, raw: bytes) -> None:
        self.policy = policy
        self.raw = raw
        self.hash = tagged_sha256(POLICY_TAG, raw)

    def is_golden(self, path: str) -> bool:
        return any(glob_match(p, path) for p in self.policy.golden_globs)


def default_policy() -> LoadedPolicy:
    """The built-in policy (its canonical bytes plus LF are what is hashed)."""
    policy = Policy(schema_id=POLICY_SCHEMA, golden_globs=DEFAULT_GOLDEN_GLOBS)
    return LoadedPolicy(policy, canonical_bytes_plain(policy.to_json_value()) + b"\n")


def parse_policy(raw: bytes) -> LoadedPolicy:
    """Parse policy bytes strictly (unknown fields refused).

    Raises:
        ReviewInputInvalid: ``review-policy-invalid``.
    """
    try:
        strict_json(raw, what="the policy", limit=POLICY_LIMIT)
        policy = Policy.model_validate_json(raw)
    except ReviewInputInvalid as exc:
        raise POLICY_INVALID(exc.fact) from None
    except ValidationError as exc:
        raise POLICY_INVALID(f"the policy is invalid: {describe_validation_error(exc)}") from None
    return LoadedPolicy(policy, raw)


def load_policy(path: Path | None) -> LoadedPolicy:
    """The policy at ``path``, or the built-in one."""
    if path is None:
        return default_policy()
    try:
        raw = read_document(path, limit=POLICY_LIMIT, follow=True)
    except TooLarge:
        raise POLICY_INVALID(f"the policy is larger than {POLICY_LIMIT} bytes") from None
    except OSError as exc:
        raise POLICY_INVALID(f"cannot read --policy {path}: {exc.strerror}") from None
    return parse_policy(raw)
