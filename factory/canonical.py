"""Moved to :mod:`factory.documents.canonical` (issue 25): this name stays as a thin
re-export because about 130 modules import it; new code imports the documents package."""

from __future__ import annotations

from factory.documents.canonical import (
    SHA256_PREFIX,
    DuplicateKey,
    canonical_bytes,
    canonical_bytes_plain,
    digest,
    is_digest,
    schema_id,
    sha256_hex,
    tagged_sha256,
    unique_keys,
)

__all__ = [
    "SHA256_PREFIX",
    "DuplicateKey",
    "canonical_bytes",
    "canonical_bytes_plain",
    "digest",
    "is_digest",
    "schema_id",
    "sha256_hex",
    "tagged_sha256",
    "unique_keys",
]
