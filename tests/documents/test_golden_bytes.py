"""Documents' bytes before and after the fold into ``factory.documents`` (issue 25).

Each writer and reader runs over one fixed corpus; the outcome (bytes as hex, digests,
decoded values, refusal messages) is compared with golden files that were generated from
the code *before* the three JSON readers/writers were folded together. Equal files prove
the fold changed no byte and no refusal (the keys still name the old functions:
``gate_*`` was ``factory/gate/jsonio.py``, ``review_*`` was ``factory/review/canon.py``;
``canonical_bytes*``/``digest`` were ``factory/canonical.py``). The gate's documents (an
entry, an evaluation record, an admitted observation) are built from fixed inputs too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from factory.documents.canonical import (
    canonical_bytes,
    canonical_bytes_plain,
    digest,
    digest_plain,
    exact_bytes,
    sha256_hex,
    tagged_sha256,
)
from factory.documents.emit import inert_bytes, json_line
from factory.documents.reading import read_json, read_own
from factory.gate.evaluate import evaluate
from factory.gate.evidence import load
from factory.gate.runpack import export
from factory.gate.service import Gate, LoadedRun
from factory.gate.state import GENESIS_PREV, apply, genesis, make_entry, start_body
from factory.gate.verify import verify
from factory.review.documents import strict_json_plain
from tests.gate.helpers import (
    NOW,
    condition,
    evidence,
    new_gate,
    observation,
    raw_observation,
    scenario,
    started,
    two_stages,
)
from tests.support.golden import assert_golden, placeholders

GOLDEN = Path(__file__).with_name("golden")

VALUES: dict[str, Any] = {
    "empty-object": {},
    "empty-list": [],
    "scalars": [None, True, False, 0, -1, 7, "", "a"],
    "nested": {"b": [1, {"z": None, "a": [True]}], "a": {"c": "x"}},
    "controls": {"s": 'tab\tnl\ncr\rnul\x00bell\x07del\x7f"\\/'},
    "non-ascii-values": {"k": "é 日本 \U0001f600 \u2028 \u202e \x85"},
    "non-ascii-keys": {"é": 1, "e": 2, "\U0001f600": 3, "\uffff": 4, "z": 5},
    "utf16-order": {"\ue000": 1, "\U00010000": 2},
    "floats": [0.0, -0.0, 1.0, 0.1, 1e21, 1e-7, 123456789.125, 5e-324],
    "big-ints": [2**53 - 1, -(2**53 - 1), 2**53, 2**60],
    "tuple-inside": {"t": ("a", 1)},
    "lone-surrogate": {"s": "\ud800"},
    "surrogate-key": {"\udfff": 1},
    "nan": [float("nan")],
    "infinity": {"x": float("inf")},
    "non-string-key": {1: "a"},
    "a-set": {"s": {1}},
    "deep": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]],
    "decimals": {"d": [Decimal("1.10"), Decimal("1e400"), Decimal("-0.0")]},
}

READ_INPUTS: dict[str, bytes] = {
    "object": b'{"a": 1, "b": [true, null, "x"]}',
    "float": b'{"x": 1.5, "y": 1e3, "z": -0.0}',
    "big-int": b"[9007199254740993]",
    "non-ascii-key": '{"é": 1}'.encode(),
    "escaped-key": b'{"\\u00e9": 1}',
    "escaped-ascii": b'{"\\u0061": 1}',
    "duplicate": b'{"a": 1, "a": 2}',
    "duplicate-nested": b'{"a": {"b": 1, "c": 2, "b": 3}}',
    "nan": b'{"a": NaN}',
    "infinity": b"[Infinity]",
    "neg-infinity": b"[-Infinity]",
    "not-utf8": b'{"a": "\xff"}',
    "bom": b'\xef\xbb\xbf{"a": 1}',
    "trailing": b'{"a": 1} x',
    "two-values": b"1 2",
    "empty": b"",
    "spaces": b"   ",
    "truncated": b'{"a": ',
    "lone-surrogate": b'{"a": "\\ud800"}',
    "deep-33": b"[" * 33 + b"]" * 33,
    "deep-32": b"[" * 32 + b"]" * 32,
    "very-deep": b"[" * 100_000 + b"]" * 100_000,
    "too-large": b'"' + b"x" * 200 + b'"',
    "utf16-text": '{"a": 1}'.encode("utf-16"),
}

Outcome = dict[str, Any]


def _attempt(fn: Callable[[], Any], render: Callable[[Any], Any]) -> Outcome:
    try:
        return {"ok": render(fn())}
    except Exception as exc:  # the refusal itself is what is pinned
        return {"error": type(exc).__name__, "message": str(exc)}


def _hex(data: bytes) -> str:
    return data.hex()


def _writers(value: Any) -> dict[str, Outcome]:
    tag = "factory.test-golden/1"
    return {
        "canonical_bytes": _attempt(lambda: canonical_bytes(value), _hex),
        "canonical_bytes_plain": _attempt(lambda: canonical_bytes_plain(value), _hex),
        "review_canonical": _attempt(lambda: canonical_bytes_plain(value), _hex),
        "digest": _attempt(lambda: digest(tag, value), str),
        "review_digest": _attempt(lambda: digest_plain(tag, value), str),
        "gate_dumps": _attempt(lambda: exact_bytes(value), _hex),
        "json_line": _attempt(lambda: json_line(value), _hex),
        "json_line_indent": _attempt(lambda: json_line(value, indent=2, sort_keys=True), _hex),
    }


def _shown(value: Any) -> Any:
    """A decoded value as JSON-able text that keeps Decimal and float apart."""
    if isinstance(value, dict):
        return {k.encode("utf-8", "surrogatepass").hex(): _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, str):
        return "str:" + value.encode("utf-8", "surrogatepass").hex()
    return f"{type(value).__name__}:{value!r}"


def gate_read(data: bytes | str, *, limit: int) -> Any:
    """The decision gate's reading: exact decimals; its own checks name a lone surrogate."""
    return read_json(data, limit=limit, decimals=True, lone_surrogates=True)


def _readers(data: bytes) -> dict[str, Outcome]:
    return {
        "gate_loads": _attempt(lambda: gate_read(data, limit=150), _shown),
        "gate_loads_str": _attempt(lambda: gate_read(data.decode("latin-1"), limit=150), _shown),
        "gate_plain_loads": _attempt(lambda: read_own(data), _shown),
        "gate_loads_roomy": _attempt(lambda: gate_read(data, limit=10**7), _shown),
        "review_strict_roomy": _attempt(
            lambda: strict_json_plain(data, what="x", limit=10**7),
            lambda pair: [_shown(pair[0]), pair[1]],
        ),
        "review_strict": _attempt(
            lambda: strict_json_plain(data, what="the file", limit=150),
            lambda pair: [_shown(pair[0]), pair[1]],
        ),
    }


def _lines(rows: dict[str, dict[str, Outcome]]) -> bytes:
    out = [json.dumps({"case": name, **row}, sort_keys=True) for name, row in rows.items()]
    return ("\n".join(out) + "\n").encode("ascii")


def test_writers_bytes_are_pinned() -> None:
    assert_golden(GOLDEN / "writers.jsonl", _lines({k: _writers(v) for k, v in VALUES.items()}))


def test_readers_outcomes_are_pinned() -> None:
    rows = {k: _readers(v) for k, v in READ_INPUTS.items()}
    assert_golden(GOLDEN / "readers.jsonl", _lines(rows))


def test_inert_bytes_are_pinned() -> None:
    def inert(value: Any) -> Outcome:
        return _attempt(lambda: inert_bytes(canonical_bytes(value)), _hex)

    rows = {name: {"inert": inert(value)} for name, value in VALUES.items()}
    assert_golden(GOLDEN / "inert.jsonl", _lines(rows))


def test_gate_documents_are_pinned() -> None:
    """A run's entries, an evaluation record and an admitted observation, fixed inputs."""
    sc = scenario([condition("ca"), condition("cb", operand=2)], completion=None)
    state = genesis(sc, make_entry("r", 0, GENESIS_PREV, start_body(sc, {})))
    ev = [
        evidence(sc, "e1", observation("ca", 0)),
        evidence(sc, "e2", raw_observation("cb", "2.0")),
    ]
    cand = evaluate(sc, state, ev, NOW)
    body = {"kind": "accept", "request": cand.candidate, "candidate": cand.candidate,
            "evaluation": cand.digest, "delta": cand.delta}  # fmt: skip
    entry = make_entry("r", state.seq + 1, state.head, body)
    after = apply(sc, state, entry)
    doc = {
        "spec_hash": sc.spec_hash,
        "genesis_head": state.head,
        "evaluation": cand.canonical.decode("utf-8"),
        "evaluation_digest": cand.digest,
        "candidate": cand.candidate,
        "entry": canonical_bytes(entry.to_json()).decode("utf-8"),
        "head_after": after.head,
        "evidence": [[e.id, e.sha256, e.declared_sha256, e.kind, _shown(e.value)] for e in ev],
        "tagged": tagged_sha256("factory.gate-entry/1", b""),
    }
    assert_golden(GOLDEN / "gate-documents.json", json_line(doc, indent=2, sort_keys=True))


def _finished_run(tmp_path: Path) -> tuple[Gate, LoadedRun]:
    sc = two_stages()
    gate = new_gate(tmp_path)
    run = started(gate, sc)
    gate.submit(run, "e1", observation("c1", 0))
    step = gate.accept(run, gate.derive(run))
    assert step.run is not None
    return gate, step.run


def test_gate_verification_and_status_are_pinned(tmp_path: Path) -> None:
    """What ``factory gate status`` and ``factory gate verify`` print (sorted keys), for a
    run half-way, a sound runpack, a tampered one and an empty folder."""
    gate, run = _finished_run(tmp_path / "store")
    out = tmp_path / "pack"
    export(gate, run, out)
    reports = {"status": gate.status(run), "sound": verify(out, now=NOW + 10**9)}
    evaluations = out / "evaluations.jsonl"
    evaluations.write_bytes(evaluations.read_bytes().replace(b'"true"', b'"fals"', 1))
    reports["tampered"] = verify(out, now=NOW + 10**9, max_age_s=0)
    (tmp_path / "empty").mkdir()
    reports["empty"] = verify(tmp_path / "empty", now=NOW)
    data = b"".join(json_line(v, sort_keys=True) for v in reports.values())
    assert_golden(GOLDEN / "gate-outputs.jsonl", placeholders(data, tmp=tmp_path))


def _observation_variants() -> dict[str, bytes]:
    """Each branch of the observation document's checks, and sound twins."""
    base = json.loads(observation("ca", 1))
    failure = {"family": "operational", "code": "provider-crashed", "message": "boom"}
    absent = {"absent": {"universe": "files", "complete": True}}
    changes: dict[str, Any] = {
        "sound-value": {},
        "sound-absent": {"observation": absent},
        "sound-failure": {"observation": {"failure": failure}},
        "sound-full": {"actor": "bot", "derivation": ["e0", "acq:x:1"], "mutated": True,
                       "artefacts": [{"role": "log", "sha256": "a" * 64, "bytes": 3}],
                       "scope": {"kind": "file", "value": "src/x.py"}},
        "decimal-value": {"observation": {"value": 1.5}},
        "unknown-field": {"zeta": 1, "alpha": 2},
        "unknown-and-missing": {"zeta": 1, "producer": None},
        "missing": {"producer": None, "condition": None},
        "schema": {"schema": "factory.gate-observation/2"},
        "schema-type": {"schema": 1},
        "ingress": {"ingress": "pushed"},
        "scope-not-object": {"scope": "tree"},
        "scope-extra": {"scope": {"kind": "tree", "x": 1}},
        "scope-no-kind": {"scope": {"value": "x"}},
        "scope-kind": {"scope": {"kind": "branch"}},
        "scope-value": {"scope": {"kind": "tree", "value": ""}},
        "scope-value-long": {"scope": {"kind": "tree", "value": "x" * 4097}},
        "observed-at": {"observed_at": "yesterday"},
        "observed-at-type": {"observed_at": 5},
        "observation-empty": {"observation": {}},
        "observation-two": {"observation": {"value": 1, "absent": {}}},
        "observation-kind": {"observation": {"guess": 1}},
        "absent-shape": {"observation": {"absent": {"universe": "u"}}},
        "absent-complete": {"observation": {"absent": {"universe": "u", "complete": 1}}},
        "absent-universe": {"observation": {"absent": {"universe": "", "complete": True}}},
        "failure-shape": {"observation": {"failure": {"family": "operational"}}},
        "failure-code": {"observation": {"failure": {**failure, "code": "nope"}}},
        "failure-family": {"observation": {"failure": {**failure, "family": "x"}}},
        "failure-integrity": {"observation": {"failure": {**failure, "family": "integrity",
                                                          "code": "signature-invalid"}}},
        "failure-message": {"observation": {"failure": {**failure, "message": "m" * 1025}}},
        "mutated": {"mutated": "yes"},
        "artefacts-type": {"artefacts": {}},
        "artefacts-many": {"artefacts": [{"role": "r", "sha256": "a" * 64, "bytes": 1}] * 65},
        "artefacts-item": {"artefacts": [{"role": "r", "sha256": "A" * 64, "bytes": 1}]},
        "artefacts-bytes": {"artefacts": [{"role": "r", "sha256": "a" * 64, "bytes": True}]},
        "condition": {"condition": ""},
        "condition-type": {"condition": 3},
        "producer": {"producer": "p" * 257},
        "actor": {"actor": ""},
        "actor-null": {"actor": None},
        "content-type": {"content_type": ["x"]},
        "surrogate": {"content_type": "\ud800"},
        "derivation-type": {"derivation": "e1"},
        "derivation-many": {"derivation": ["e"] * 257},
        "derivation-item": {"derivation": ["not an id"]},
        "late-and-early": {"mutated": 1, "condition": ""},
        "scope-and-observation": {"scope": 1, "observation": 1},
    }  # fmt: skip
    out: dict[str, bytes] = {}
    for name, change in changes.items():
        doc = {**base, **change}
        doc = {k: v for k, v in doc.items() if v is not None or k == "actor"}
        if name == "actor-null":
            doc["actor"] = None
        elif "actor" in doc and doc["actor"] is None:
            del doc["actor"]
        out[name] = json.dumps(doc).encode()
    out["not-object"] = b"[1]"
    out["not-json"] = b"{"
    out["duplicate"] = b'{"schema": 1, "schema": 2}'
    return out


def test_observation_refusals_are_pinned() -> None:
    """The gate's observation document: what admission says (or admits) for each check, and
    what a stored record that no longer parses carries (it lands in evaluation bytes)."""
    sc = scenario([condition("ca")])
    rows: dict[str, dict[str, Outcome]] = {}
    for name, payload in _observation_variants().items():
        admitted = _attempt(
            lambda p=payload: evidence(sc, "e1", p, ingress="submitted"),  # type: ignore[misc]
            lambda e: [e.kind, _shown(e.value), e.condition, e.producer, e.actor,
                       e.content_type, list(e.derivation), e.scope_kind, e.scope_value,
                       e.observed_at, e.universe, e.complete, e.mutated,
                       None if e.failure is None else e.failure.to_json()],
        )  # fmt: skip
        stored = load("e1", payload, sha256_hex(payload), None)
        problem = None if stored.problem is None else stored.problem.to_json()
        rows[name] = {"admit": admitted, "load": {"ok": problem}}
    assert_golden(GOLDEN / "gate-observations.jsonl", _lines(rows))


def test_runpack_manifest_and_history_are_pinned(tmp_path: Path) -> None:
    """The runpack's manifest and history bytes as written by ``factory gate export``."""
    gate, run = _finished_run(tmp_path / "store")
    manifest = export(gate, run, tmp_path / "pack")
    data = b"".join(
        (tmp_path / "pack" / name).read_bytes()
        for name in ("manifest.json", "history.jsonl", "evidence.jsonl", "evaluations.jsonl")
    )
    assert_golden(GOLDEN / "gate-runpack.txt", data + json_line(manifest, sort_keys=True))
