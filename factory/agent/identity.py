"""The candidate identity record built from a derived candidate (SPEC A-4). Pure."""

from __future__ import annotations

from factory.agent.receipt import CandidateBody, ChangedPath
from factory.documents.canonical import sha256_hex
from factory.gitio.candidate import DerivedCandidate


def candidate_body(d: DerivedCandidate) -> CandidateBody:
    """The A-4 record of a derived candidate (pure)."""
    return CandidateBody(
        base_commit=d.base_commit,
        base_tree=d.base_tree,
        candidate_tree=d.candidate_tree,
        status_bytes=len(d.status),
        status_sha256=sha256_hex(d.status),
        patch_bytes=len(d.patch),
        patch_sha256=sha256_hex(d.patch),
        files=[
            ChangedPath(path=f.path, state=f.state, mode=f.mode, bytes=f.size, sha256=f.sha256)
            for f in d.files
        ],
    )
