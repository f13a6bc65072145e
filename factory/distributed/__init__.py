"""Batches past one machine (SPEC M-3): a batch fans out over Temporal workers.

Temporal schedules; it never vouches. Only task ids, digests, refs and outcomes travel
through the engine (:mod:`payloads`); the receipt, its evidence and the candidate travel
through git as a content-addressed bundle under ``refs/factory/runs/`` (:mod:`bundle`),
and the coordinating machine counts a task done only once the fetched receipt verifies.

The Temporal SDK is asyncio; factory's own concurrency is trio. The SDK runs in one
thread of its own behind :mod:`bridge`, and every effect factory performs (cloning, the
agent cycle under factory's supervisor, pushing) runs in the trio loop.
"""
