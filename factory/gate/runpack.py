"""Export a run as a runpack folder (``factory gate export``).

Layout (every file listed in the manifest with its size and SHA-256):

* ``scenario.toml`` or ``scenario.json``: the exact scenario bytes the run started with;
* ``history.jsonl``: one canonical entry per line (seq, prev, body, hash), genesis first;
* ``evaluations.jsonl``: the canonical record of each accepted evaluation, one per line, in
  history order — the bytes whose tagged SHA-256 the accept entry names;
* ``evidence.jsonl``: one line per evidence record (id, sha256, signature), by id;
* ``evidence/<sha256>``: each record's exact bytes; ``blobs/<sha256>``: provider output the
  records name as artefacts;
* ``manifest.json`` (``factory.gate-runpack/1``): run, scenario id, spec hash, head, the
  export time, the ordered file list and ``root_hash`` over that list.

The manifest is not signed: a runpack shows consistency, not authorship.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from factory.documents.canonical import canonical_bytes, digest, sha256_hex
from factory.documents.reading import read_own
from factory.fsio import claim_dir, fsync_dir, write_exclusive
from factory.gate.errors import EXPORT_FAILED, STORE_CORRUPT
from factory.gate.reports import (
    ExportFailure,
    FileRow,
    Head,
    RunpackManifest,
)
from factory.gate.service import Gate, LoadedRun
from factory.gate.values import format_instant

ROOT_TAG = "factory.gate-runpack-root/1"
MANIFEST = "manifest.json"
FAILED = "export-failed.json"


def root_hash(files: list[dict[str, Any]]) -> str:
    """The digest over the ordered ``[{path, sha256, bytes}]`` list."""
    return digest(ROOT_TAG, files)


def export(gate: Gate, run: LoadedRun, out: Path) -> dict[str, Any]:
    """Write the runpack of ``run`` into the new folder ``out``; return the manifest."""
    entries = gate.store.entries(run.run)
    files: dict[str, bytes] = {f"scenario.{run.scenario.source_format}": run.scenario.source}
    files["history.jsonl"] = b"".join(canonical_bytes(e.to_json()) + b"\n" for e in entries)
    lines = []
    for entry in entries[1:]:
        record = gate.store.evaluation(run.run, str(entry.body["evaluation"]))
        if record is None:
            raise STORE_CORRUPT(f"run {run.run} entry {entry.seq}: its evaluation is not stored")
        lines.append(record + b"\n")
    files["evaluations.jsonl"] = b"".join(lines)
    _add_evidence(gate, run, files)
    listing = [
        FileRow(path=path, sha256=sha256_hex(data), bytes=len(data))
        for path, data in sorted(files.items())
    ]
    manifest = RunpackManifest(
        run=run.run,
        scenario=run.scenario.id,
        spec_hash=run.scenario.spec_hash,
        head=Head(seq=run.state.seq, hash=run.state.head),
        exported_at=format_instant(gate.clock()),
        files=listing,
        root_hash=root_hash([row.to_json_value() for row in listing]),
    ).to_json_value()
    _write(out, files, canonical_bytes(manifest) + b"\n")
    return manifest


def _add_evidence(gate: Gate, run: LoadedRun, files: dict[str, bytes]) -> None:
    evidence = gate.store.evidence(run.run)
    index = [
        {"id": e.id, "sha256": e.declared_sha256,
         "signature": None if e.signature is None else e.signature.to_json()}
        for e in evidence
    ]  # fmt: skip
    files["evidence.jsonl"] = b"".join(canonical_bytes(i) + b"\n" for i in index)
    for item in evidence:
        files[f"evidence/{item.declared_sha256}"] = item.payload
        for artefact in _artefacts(item.payload):
            blob = gate.store.blob(artefact)
            if blob is not None:
                files[f"blobs/{artefact}"] = blob


def _artefacts(payload: bytes) -> list[str]:
    try:
        doc = read_own(payload)
    except ValueError:
        return []
    items = doc.get("artefacts", []) if isinstance(doc, dict) else []
    return [str(a["sha256"]) for a in items if isinstance(a, dict) and "sha256" in a]


def _write(out: Path, files: dict[str, bytes], manifest: bytes) -> None:
    """Claim ``out``, write every file, the manifest last: a folder without a manifest is
    an unfinished export, and a failure leaves ``export-failed.json`` saying why."""
    claim_dir(out, mode=0o755)
    try:
        for sub in ("evidence", "blobs"):
            os.mkdir(out / sub, 0o755)
        for path, data in files.items():
            write_exclusive(out / path, data, mode=0o644)
        write_exclusive(out / MANIFEST, manifest, mode=0o644)
        fsync_dir(out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            note = ExportFailure(error=exc.strerror or type(exc).__name__)
            write_exclusive(out / FAILED, note.canonical() + b"\n", mode=0o644)
        raise EXPORT_FAILED(f"the runpack could not be written ({exc.strerror})") from exc
