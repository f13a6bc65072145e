"""Typed errors of the review mirror (SPEC F-2, F-3), registered once."""

from __future__ import annotations

from factory.errors import Code
from factory.review.errors import ReviewRecordCorrupt, ReviewRefused

MIRROR_CONFLICT = ReviewRefused.define(
    "review-mirror-conflict",
    "a mirror ref is never moved: inspect both sides with 'git ls-remote REMOTE "
    "refs/factory/review/*' and 'git for-each-ref refs/factory/review'",
)
MIRROR_INVALID = ReviewRecordCorrupt.define(
    "review-mirror-invalid",
    "nothing was imported; a maintainer removes the named ref from the remote "
    "('git push REMOTE :refs/factory/review/v1/ID') after inspecting it",
)
MIRROR_REMOTE = ReviewRefused.define(
    "review-mirror-remote",
    "name a configured remote whose URL git uses as written (no repository insteadOf rule)",
)
MIRROR_EMPTY = ReviewRefused.define(
    "review-mirror-nothing",
    "approve a review first (factory review status names the next command)",
)


def refused(code: Code[ReviewRefused], fact: str, *next_commands: str) -> ReviewRefused:
    """A mirror refusal naming the command that makes progress."""
    return ReviewRefused(fact, code=code, next=next_commands)
