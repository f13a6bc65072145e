"""The review's domain tags and its wording of strict-JSON refusals (SPEC F-4).

Canonical bytes, digests and the strict reader are :mod:`factory.documents` (one of each
for all of factory); this module only names the review's digest domains and turns a
:class:`~factory.documents.reading.JsonRefused` into the review's typed refusal, worded
as the review always worded it. Stdlib only (the hook path imports it).
"""

from __future__ import annotations

import hashlib
from typing import Any

from factory.documents.reading import JsonRefused, read_json_plain
from factory.review.errors import ReviewInputInvalid

STATE_TAG = "factory.review-state/1"
PATHS_TAG = "factory.review-paths/1"
SNAPSHOT_TAG = "factory.review-snapshot/1"
BINDING_TAG = "factory.review-lens-binding/1"
LENS_RESULT_TAG = "factory.review-lens-result/1"
REFUTER_TAG = "factory.review-refuter-result/1"
CHECK_TAG = "factory.review-validator-check/1"
VALIDATION_TAG = "factory.review-validation/1"
POLICY_TAG = "factory.review-policy/1"
EVIDENCE_TAG = "factory.review-final-evidence/1"

#: The hash of no bytes: "no correction" / "no final evidence" (never a tagged digest).
EMPTY_HASH = "sha256:" + hashlib.sha256(b"").hexdigest()


def strict_json(data: bytes, *, what: str, limit: int) -> Any:
    """Decode one JSON value: UTF-8, no duplicate keys, no NaN/Infinity, nothing after it.

    Raises:
        ReviewInputInvalid: naming ``what`` and the first problem.
    """
    return strict_json_plain(data, what=what, limit=limit)[0]


def strict_json_plain(data: bytes, *, what: str, limit: int) -> tuple[Any, bool]:
    """:func:`strict_json`, and whether the value is *plain* (see
    :func:`factory.documents.reading.read_json_plain`). A lone surrogate is left to the
    review's own checks, which name the field that holds it."""
    try:
        return read_json_plain(data, limit=limit, lone_surrogates=True)
    except JsonRefused as exc:
        raise ReviewInputInvalid(_worded(exc, what)) from None


def _worded(exc: JsonRefused, what: str) -> str:
    if exc.reason == "size":
        return f"{what} is larger than {exc.limit} bytes"
    if exc.reason == "utf8":
        return f"{what} is not UTF-8 text"
    if exc.reason == "duplicate":
        return f"{what} is not strict JSON: duplicate key {exc.detail!r}"
    if exc.reason == "depth":
        return f"{what} is not strict JSON: nested too deeply"
    if exc.reason == "constant":
        return f"{what} is not one JSON value ({exc.detail} is not JSON)"
    return f"{what} is not one JSON value ({exc.detail.split(':')[0]})"
