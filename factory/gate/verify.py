"""``factory gate verify DIR``: check a runpack without trusting it, and report four
separate properties — never one green tick for all (SPEC G).

1. **record integrity**: every listed file exists with its size and SHA-256, nothing is
   unlisted, the list is in canonical order and hashes to ``root_hash``, the scenario
   hashes to the spec hash the manifest and the start entry name, the history's hash chain
   and laws re-validate, and the head is the manifest's.
2. **source authenticity**: every evidence signature verifies with a key the scenario
   declares (``not-applicable`` when nothing is signed). The manifest itself is unsigned.
3. **freshness**: every record an evaluation used was observed no later than that
   evaluation's time and within its condition's ``max_age_s``; with ``max_age_s`` given
   here, the export itself is young enough. A pack cannot show the run did not move on.
4. **replay agreement**: every accepted evaluation, replayed with the pure evaluator from
   the recorded evidence, scenario, prior history and time, gives the recorded record
   byte for byte — the recorded line must be the RFC 8785 bytes of the re-derived record,
   so ``1`` for ``true``, ``1.0`` for ``1`` or a key out of canonical order is a
   disagreement even where the parsed values compare equal in Python — and its candidate
   and delta (compared as canonical bytes too) are the ones the history accepted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from factory.agent.evidence import read_nofollow
from factory.documents.canonical import canonical_bytes_plain, sha256_hex, tagged_sha256
from factory.documents.reading import read_own
from factory.errors import FactoryError
from factory.gate import state as history
from factory.gate.errors import EvidenceRefused
from factory.gate.evaluate import EVALUATION_SCHEMA, candidate_id, evaluate
from factory.gate.evidence import Evidence, load, parse_signature
from factory.gate.reports import (
    MANIFEST_SCHEMA,
    VERIFICATION_SCHEMA,
    Authenticity,
    AuthenticityStatus,
    FileRow,
    Freshness,
    GateVerification,
    Properties,
    Property,
)
from factory.gate.resolve import signature_ok
from factory.gate.runpack import MANIFEST, root_hash
from factory.gate.scenario import Scenario, load_bytes
from factory.gate.values import OutsideDomain, format_instant, parse_instant

REPORT_SCHEMA = VERIFICATION_SCHEMA
MANIFEST_LIMIT = 64 << 20
FILE_LIMIT = 256 << 20


class _Pack:
    """The files of a runpack as read once, with the problems met reading them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []
        self.manifest: dict[str, Any] = {}
        self.data: dict[str, bytes] = {}

    def read(self) -> None:
        try:
            raw = read_nofollow(self.folder / MANIFEST, limit=MANIFEST_LIMIT)
            manifest = read_own(raw)
        except (OSError, ValueError):
            self.problems.append("manifest.json is missing or not JSON")
            return
        if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
            self.problems.append(f"manifest.json is not {MANIFEST_SCHEMA}")
            return
        self.manifest = manifest
        files = manifest.get("files")
        if not isinstance(files, list) or not all(_file_row(f) for f in files):
            self.problems.append("manifest files is not a list of {path, sha256, bytes}")
            return
        paths = [f["path"] for f in files]
        if paths != sorted(set(paths)):
            self.problems.append("manifest file list is not in canonical order (or repeats a path)")
        if root_hash(files) != manifest.get("root_hash"):
            self.problems.append("root_hash does not match the file list")
        for row in files:
            self._read_file(row)
        listed = set(paths) | {MANIFEST}
        for extra in sorted(_tree(self.folder) - listed):
            self.problems.append(f"{extra}: present but not listed in the manifest")

    def _read_file(self, row: Mapping[str, Any]) -> None:
        path = str(row["path"])
        if path.startswith("/") or ".." in path.split("/"):
            self.problems.append(f"{path}: not a path inside the pack")
            return
        try:
            data = read_nofollow(self.folder / path, limit=FILE_LIMIT)
        except FileNotFoundError:
            self.problems.append(f"{path}: missing")
            return
        except OSError:
            self.problems.append(f"{path}: not a readable regular file")
            return
        if len(data) != row["bytes"] or sha256_hex(data) != row["sha256"]:
            self.problems.append(f"{path}: size or SHA-256 differs from the manifest")
        self.data[path] = data


def _file_row(row: Any) -> bool:
    try:
        FileRow.model_validate(row)
    except ValidationError:
        return False
    return True


def _tree(folder: Path) -> set[str]:
    out = set()
    for root, dirs, names in os.walk(folder):
        rel = os.path.relpath(root, folder)
        for name in names:
            out.add(name if rel == "." else f"{rel}/{name}")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return out


def verify(folder: Path, *, now: int, max_age_s: int | None = None) -> dict[str, Any]:
    """Verify the runpack in ``folder`` at verifier time ``now`` (ns since the epoch)."""
    pack = _Pack(folder)
    pack.read()
    integrity = list(pack.problems)
    scenario, entries = _scenario_and_history(pack, integrity)
    evidence = _evidence(pack, integrity)
    evaluations = _lines(pack.data.get("evaluations.jsonl", b""))
    replay: list[str] = []
    freshness: list[str] = []
    replayed = 0
    if scenario is None or entries is None:
        replay.append("cannot replay: the scenario or the history is unreadable")
    else:
        replayed = _replay(scenario, entries, evaluations, evidence, replay, freshness, integrity)
    signed = _authenticity(scenario, evidence)
    exported = _age(pack.manifest, now, max_age_s, freshness)
    props = Properties(
        record_integrity=_prop(integrity, len(pack.data)),
        source_authenticity=signed,
        freshness=Freshness(
            **_prop(freshness, replayed).model_dump(),
            exported_at=exported,
            verified_at=format_instant(now),
        ),
        replay_agreement=_prop(replay, replayed),
    )
    checks = (props.record_integrity, signed, props.freshness, props.replay_agreement)
    return GateVerification(
        runpack=os.fspath(folder),
        run=pack.manifest.get("run"),
        spec_hash=pack.manifest.get("spec_hash"),
        head=pack.manifest.get("head"),
        properties=props,
        ok=all(p.status != "fail" for p in checks),
        residual="the manifest is unsigned: integrity shows consistency, not authorship",
    ).to_json_value()


def _prop(problems: list[str], checked: int) -> Property:
    return Property(status="fail" if problems else "pass", checked=checked, problems=problems)


def _scenario_and_history(
    pack: _Pack, problems: list[str]
) -> tuple[Scenario | None, list[history.Entry] | None]:
    names = [p for p in pack.data if p.startswith("scenario.")]
    scenario = None
    if len(names) != 1:
        problems.append("the pack does not hold exactly one readable scenario file")
    else:
        try:
            scenario = load_bytes(pack.data[names[0]], names[0].split(".", 1)[1])
        except FactoryError as exc:
            problems.append(f"the scenario does not load: {exc.fact}")
    if scenario is not None and scenario.spec_hash != pack.manifest.get("spec_hash"):
        problems.append("the scenario does not hash to the manifest's spec_hash")
    entries = []
    for number, line in enumerate(_lines(pack.data.get("history.jsonl", b""))):
        try:
            raw = read_own(line)
            entries.append(
                history.Entry(raw["run"], raw["seq"], raw["prev"], raw["body"], raw["hash"])
            )
        except (ValueError, KeyError, TypeError):
            problems.append(f"history line {number + 1} does not parse")
            return scenario, None
    if not entries:
        problems.append("the history is empty or missing")
        return scenario, None
    head = pack.manifest.get("head") or {}
    if entries[-1].hash != head.get("hash") or entries[-1].seq != head.get("seq"):
        problems.append("the last history entry is not the manifest's head")
    return scenario, entries


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line]


def _evidence(pack: _Pack, problems: list[str]) -> dict[str, Evidence]:
    out: dict[str, Evidence] = {}
    for line in _lines(pack.data.get("evidence.jsonl", b"")):
        try:
            row = read_own(line)
            sig = row["signature"]
            signature = None if sig is None else parse_signature(sig["key_id"], sig["ed25519"])
            payload = pack.data.get(f"evidence/{row['sha256']}")
        except (ValueError, KeyError, TypeError, EvidenceRefused):
            problems.append("an evidence index line does not parse")
            continue
        if payload is None:
            problems.append(f"evidence {row['id']}: its bytes are not in the pack")
            continue
        out[str(row["id"])] = load(str(row["id"]), payload, str(row["sha256"]), signature)
    return out


def _replay(
    scenario: Scenario,
    entries: list[history.Entry],
    evaluations: list[bytes],
    evidence: Mapping[str, Evidence],
    problems: list[str],
    stale: list[str],
    integrity: list[str],
) -> int:
    try:
        history.check_hash(entries[0])
        state = history.genesis(scenario, entries[0])
    except FactoryError as exc:
        integrity.append(exc.fact)
        problems.append("cannot replay: the start entry does not re-validate")
        return 0
    if len(evaluations) != len(entries) - 1:
        problems.append(f"{len(entries) - 1} accepted entries but {len(evaluations)} evaluations")
    count = 0
    for entry, line in zip(entries[1:], evaluations, strict=False):
        try:
            history.check_hash(entry)
            _replay_one(scenario, state, entry, line, evidence, problems, stale)
            state = history.apply(scenario, state, entry)
        except FactoryError as exc:
            integrity.append(exc.fact)
            problems.append(f"entry {entry.seq}: replay stopped, the history does not re-validate")
            return count
        count += 1
    return count


def _replay_one(
    scenario: Scenario,
    state: history.RunState,
    entry: history.Entry,
    line: bytes,
    evidence: Mapping[str, Evidence],
    problems: list[str],
    stale: list[str],
) -> None:
    where = f"entry {entry.seq}"
    if tagged_sha256(EVALUATION_SCHEMA, line) != entry.body.get("evaluation"):
        problems.append(f"{where}: the evaluation bytes are not the ones the history accepted")
        return
    try:
        recorded = read_own(line)
        now = parse_instant(recorded["now"])
        refs = recorded["evidence"]
        used = [evidence[ref["id"]] for ref in refs]
    except (ValueError, KeyError, TypeError, OutsideDomain):
        problems.append(f"{where}: the evaluation names evidence or a time the pack lacks")
        return
    if any(e.declared_sha256 != ref["sha256"] for e, ref in zip(used, refs, strict=True)):
        problems.append(f"{where}: the evidence bytes differ from the ones evaluated")
        return
    again = evaluate(scenario, state, used, now, recorded.get("opens", []))
    if again.canonical != line:
        problems.append(f"{where}: {disagreement(line, again.canonical)}")
    elif candidate_id(entry.prev, str(entry.body["evaluation"])) != entry.body.get("candidate"):
        problems.append(f"{where}: the accepted candidate id does not match the evaluation")
    elif not _same_json(again.delta, entry.body.get("delta")):
        problems.append(f"{where}: the accepted delta is not the evaluation's")
    _fresh(scenario, recorded, evidence, now, where, stale)


def disagreement(recorded: bytes, replayed: bytes, *, context: int = 24) -> str:
    """Why the recorded evaluation bytes are not the replay's canonical bytes, pointing at
    the first byte where they part. Parsed-value equality is not agreement: ``1`` is not
    ``true``, ``1.0`` is not ``1``, and a key out of RFC 8785 order is other bytes."""
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
        min(len(recorded), len(replayed)),
    )
    start = max(0, at - context)

    def excerpt(data: bytes) -> str:
        return repr(data[start : at + context].decode("utf-8", "replace"))

    kind = (
        "not its canonical (RFC 8785) bytes"
        if _loose_equal(recorded, replayed)
        else "a different evaluation"
    )
    return (
        f"replay disagrees with the recorded evaluation ({kind}): the bytes part at "
        f"byte {at}, recorded {excerpt(recorded)}, replay {excerpt(replayed)}"
    )


def _loose_equal(recorded: bytes, replayed: bytes) -> bool:
    """Whether the two documents are equal as Python values (where ``1 == True``)."""
    try:
        return bool(read_own(recorded) == read_own(replayed))
    except ValueError:
        return False


def _same_json(left: Any, right: Any) -> bool:
    """Equal as canonical JSON bytes, so ``true`` and ``1`` differ; unencodable → False."""
    try:
        return canonical_bytes_plain(left) == canonical_bytes_plain(right)
    except FactoryError:
        return False


def _fresh(
    scenario: Scenario,
    recorded: Mapping[str, Any],
    evidence: Mapping[str, Evidence],
    now: int,
    where: str,
    stale: list[str],
) -> None:
    for outcome in recorded.get("conditions", []):
        record = evidence.get(outcome.get("record") or "")
        cond = scenario.conditions.get(outcome.get("condition"))
        if (
            record is None
            or cond is None
            or outcome.get("resolution") not in ("present", "observed-absent")
        ):
            continue
        age = now - record.observed_at
        if age < 0:
            stale.append(f"{where}: {record.id} was observed after the evaluation")
        elif cond.policy.max_age_ns is not None and age > cond.policy.max_age_ns:
            stale.append(f"{where}: {record.id} was older than its condition allows")


def _authenticity(scenario: Scenario | None, evidence: Mapping[str, Evidence]) -> Authenticity:
    signed = [e for e in evidence.values() if e.signature is not None]
    problems: list[str] = []
    verified = 0
    for record in signed:
        result = None if scenario is None else signature_ok(record, scenario.keys)
        if result is True:
            verified += 1
        elif result is False:
            problems.append(f"evidence {record.id}: the signature does not verify")
        else:
            problems.append(f"evidence {record.id}: signed by a key the scenario does not declare")
    status: AuthenticityStatus = "not-applicable" if not signed else "fail" if problems else "pass"
    return Authenticity(status=status, checked=len(signed), verified=verified,
                        unsigned=len(evidence) - len(signed), problems=problems)  # fmt: skip


def _age(
    manifest: Mapping[str, Any], now: int, max_age_s: int | None, problems: list[str]
) -> str | None:
    exported = manifest.get("exported_at")
    try:
        at = parse_instant(exported)
    except OutsideDomain:
        problems.append("the manifest's exported_at is not an instant")
        return None
    if max_age_s is not None and now - at > max_age_s * 1_000_000_000:
        problems.append(f"the export is older than {max_age_s} s")
    if at > now:
        problems.append("the export claims a time after the verifier's clock")
    return str(exported)
