"""``factory gate …`` as users run it: JSON on stdout, typed errors, exit codes (SPEC F-2, F-3)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gate.helpers import condition, observation, scenario_doc
from tests.support.cli import run_factory


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Any]:
    stages = [
        {
            "id": "build",
            "complete": {"all": ["tests", {"not": "vuln"}]},
            "intents": [{"kind": "publish"}],
        }
    ]
    doc = scenario_doc([condition("tests"), condition("vuln", "boolean", "equals", True)], stages)
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(doc))
    files = {}
    for name, payload in (
        ("tests", observation("tests", 0)),
        ("vuln", observation("vuln", False)),
        ("bad", observation("tests", 2)),
    ):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_bytes(payload)
    return {"spec": spec, "db": str(tmp_path / "g.sqlite3"), "files": files, "tmp": tmp_path}


def gate(*args: str) -> tuple[int, Any, str]:
    proc = run_factory(["gate", *args])
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr.decode()


NOW = ["--now", "2026-01-01T00:10:00Z"]


def test_a_run_end_to_end(setup: dict[str, Any]) -> None:
    db, f = setup["db"], setup["files"]
    code, out, _ = gate("start", "--scenario", str(setup["spec"]), "--run", "r1", "--store", db)
    assert code == 0 and out["created"] and out["stages"] == {"build": "ready"}
    code, out, _ = gate("submit", "--run", "r1", "--id", "t1", str(f["tests"]), "--store", db)
    assert code == 0 and not out["replayed"]
    code, out, _ = gate("submit", "--run", "r1", "--id", "t1", str(f["tests"]), "--store", db)
    assert code == 0 and out["replayed"]
    code, out, err = gate("submit", "--run", "r1", "--id", "t1", str(f["bad"]), "--store", db)
    assert code == 2 and "gate-evidence-conflict" in err
    code, out, _ = gate("evaluate", "--run", "r1", "--store", db, *NOW)
    assert code == 3 and out["conditions"]["vuln"]["resolution"] == "missing"
    code, out, _ = gate(
        "evaluate", "--run", "r1", "--store", db, "--submit", str(f["vuln"]), "--accept", *NOW
    )
    assert code == 0 and out["accepted"]["outcome"] == "committed"
    assert out["status"]["intents"][0]["status"] == "eligible-for-dispatch"
    code, out, _ = gate("status", "--run", "r1", "--store", db)
    assert code == 0 and out["completed"] and out["head"]["seq"] == 1
    pack = setup["tmp"] / "pack"
    code, out, _ = gate("export", "--run", "r1", "--store", db, "--out", str(pack))
    assert code == 0 and out["head"]["seq"] == 1
    code, out, _ = gate("export", "--run", "r1", "--store", db, "--out", str(pack))
    assert code == 2
    code, out, _ = gate("verify", str(pack))
    assert code == 0 and out["ok"] and out["properties"]["replay_agreement"]["checked"] == 1
    (pack / "evaluations.jsonl").write_bytes(b"{}\n")
    code, out, err = gate("verify", str(pack))
    assert code == 4 and not out["ok"] and "record_integrity" in err


def test_typed_refusals(setup: dict[str, Any]) -> None:
    db = setup["db"]
    code, _, err = gate("status", "--run", "nope", "--store", db)
    assert code == 2 and "gate-run-missing" in err
    code, _, err = gate("start", "--scenario", "no-such-builtin", "--run", "r", "--store", db)
    assert code == 2 and "gate-scenario-unknown" in err
    bad = setup["tmp"] / "bad.toml"
    bad.write_text('schema = "factory.gate-scenario/1"\nid = "x"\n')
    code, _, err = gate("start", "--scenario", str(bad), "--run", "r", "--store", db)
    assert code == 2 and "gate-scenario-invalid" in err and "Traceback" not in err
    code, _, err = gate(
        "start", "--scenario", str(setup["spec"]), "--run", "r", "--param", "x=1", "--store", db
    )
    assert code == 2 and "gate-params-invalid" in err
    code, _, err = gate("start", "--scenario", str(setup["spec"]), "--run", "r", "--run", "s")
    assert code == 2 and "duplicate-flag" in err
    gate("start", "--scenario", str(setup["spec"]), "--run", "r", "--store", db)
    code, _, err = gate("evaluate", "--run", "r", "--store", db, "--now", "yesterday")
    assert code == 2 and "gate-params-invalid" in err
    code, _, err = gate("evaluate", "--run", "r", "--store", db, "--open", "nowhere")
    assert code == 2 and "gate-open-refused" in err


def test_a_failed_condition_exits_4_and_names_the_failure(setup: dict[str, Any]) -> None:
    db = setup["db"]
    gate("start", "--scenario", str(setup["spec"]), "--run", "r1", "--store", db)
    broken = setup["tmp"] / "broken.json"
    broken.write_bytes(
        observation(
            "tests",
            failure={"family": "operational", "code": "provider-crashed", "message": "segfault"},
        )
    )
    code, out, _ = gate("evaluate", "--run", "r1", "--store", db, "--submit", str(broken), *NOW)
    assert code == 4 and out["failures"][0]["code"] == "provider-crashed"


def test_builtin_scenarios_are_shown_and_listed() -> None:
    proc = run_factory(["gate", "scenario", "show", "receipt-approved"])
    assert proc.returncode == 0 and b'id = "receipt-approved"' in proc.stdout
    code, out, _ = gate("scenario", "list")
    assert code == 0 and "receipt-approved" in [s["name"] for s in out["scenarios"]]
    code, out, _ = gate("scenario", "show", "receipt-approved", "--json")
    assert code == 0 and out["spec_hash"].startswith("sha256:")
    code, _, err = gate("scenario", "show", "nope")
    assert code == 2 and "gate-scenario-unknown" in err


@pytest.mark.parametrize("sub", ["start", "submit", "evaluate", "status", "export", "verify"])
def test_every_subcommand_answers_help(sub: str) -> None:
    proc = run_factory(["gate", sub, "--help"])
    assert proc.returncode == 0 and b"usage: factory gate" in proc.stdout


def test_evaluate_acquires_bound_evidence(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text('{"failed": 0}')
    acquire = {
        "provider": "file",
        "path": "${dir}/report.json",
        "pointer": "/failed",
        "select": "/value",
    }
    doc = scenario_doc([condition("failed", acquire=acquire)], params=["dir"])
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(doc))
    db = str(tmp_path / "g.sqlite3")
    code, _, _ = gate(
        "start", "--scenario", str(spec), "--run", "r", "--param", f"dir={tmp_path}", "--store", db
    )
    assert code == 0
    code, out, _ = gate("evaluate", "--run", "r", "--store", db, "--accept", "--trace")
    assert code == 0 and out["conditions"]["failed"]["result"] == "true"
    used = out["trace"]["evidence"][0]["id"]
    assert used.startswith("acq:failed:")
    code, _, err = gate("evaluate", "--run", "r", "--store", db, "--request", "x")
    assert code == 2 and "--request" in err


@pytest.mark.parametrize("verb", [["status"], ["export", "--out"]])
def test_read_only_verbs_on_a_missing_store_create_nothing(tmp_path: Path, verb: list[str]) -> None:
    db = tmp_path / "state" / "g.sqlite3"
    args = [*verb, str(tmp_path / "pack")] if "--out" in verb else verb
    code, out, err = gate(*args, "--run", "r", "--store", str(db))
    assert code == 2 and out is None and "gate-run-missing" in err
    assert not db.exists() and not db.parent.exists() and not (tmp_path / "pack").exists()


def test_twin_start_on_a_missing_store_creates_it(setup: dict[str, Any]) -> None:
    db = setup["tmp"] / "state" / "g.sqlite3"
    code, out, _ = gate("start", "--scenario", str(setup["spec"]), "--run", "r", "--store", str(db))
    assert code == 0 and out["created"] and db.is_file()


@pytest.mark.parametrize("ext", ["toml", "json"])
@pytest.mark.parametrize("depth", [500, 5])
def test_a_scenario_nested_deep_is_a_named_refusal(tmp_path: Path, ext: str, depth: int) -> None:
    nest = "[" * depth + "]" * depth
    head = {"toml": 'schema = "factory.gate-scenario/1"\nid = "x"\nz = ', "json": '{"z": '}[ext]
    spec = tmp_path / f"deep.{ext}"
    spec.write_text(head + nest + ("}" if ext == "json" else "\n"))
    code, out, err = gate(
        "start", "--scenario", str(spec), "--run", "r", "--store", str(tmp_path / "g")
    )
    assert code == 2 and out is None
    # twin: a shallow one reaches the scenario check, a deep one is named as too deep
    assert ("input-too-deep" in err or "nested deeper" in err) == (depth == 500), err
    assert "internal" not in err


def _rows(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the store, read-only: what the store holds."""
    import sqlite3

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in sorted(tables)}
    finally:
        con.close()


def _accept(
    setup: dict[str, Any], *files: str, now: str = NOW[1], extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    """``gate evaluate --accept --request req-1`` with these evidence files submitted."""
    submits = [arg for name in files for arg in ("--submit", str(setup["files"][name]))]
    argv = ["gate", "evaluate", "--run", "r1", "--store", setup["db"], "--accept"]
    return run_factory([*argv, "--request", "req-1", *submits, "--now", now, *extra])


@pytest.mark.parametrize(("files", "code"), [(("tests", "vuln"), 0), (("tests",), 3)])
def test_an_identical_retry_of_an_accepted_request_replays_it(
    setup: dict[str, Any], files: tuple[str, ...], code: int
) -> None:
    gate("start", "--scenario", str(setup["spec"]), "--run", "r1", "--store", setup["db"])
    first = _accept(setup, *files)
    assert first.returncode == code, first.stderr
    assert json.loads(first.stdout)["accepted"]["outcome"] == "committed"
    held = _rows(setup["db"])
    # The same ask: flags in another order and another time (timing is not identity).
    retry = _accept(setup, *reversed(files), now="2026-01-01T00:20:00Z")
    assert retry.returncode == code, retry.stderr
    assert retry.stdout == first.stdout  # byte for byte, the committed result
    assert b"replaying that result" in retry.stderr
    assert _rows(setup["db"]) == held  # nothing evaluated into the store, nothing submitted
    code_now, status, _ = gate("status", "--run", "r1", "--store", setup["db"])
    assert code_now == 0 and status["head"]["seq"] == 1


@pytest.mark.parametrize(
    ("files", "extra", "differs"),
    [
        (("tests", "bad"), (), "submitted other evidence"),
        (("tests",), (), "submitted other evidence"),
        (("tests", "vuln"), ("--no-acquire",), "acquired bound evidence"),
        (("tests", "vuln"), ("--open", "build"), "opened other stages"),
    ],
)
def test_another_request_under_an_accepted_id_is_refused_and_stores_nothing(
    setup: dict[str, Any], files: tuple[str, ...], extra: tuple[str, ...], differs: str
) -> None:
    gate("start", "--scenario", str(setup["spec"]), "--run", "r1", "--store", setup["db"])
    first = _accept(setup, "tests", "vuln")
    assert first.returncode == 0, first.stderr
    held = _rows(setup["db"])
    other = _accept(setup, *files, extra=extra)
    err = other.stderr.decode()
    assert other.returncode == 2 and "gate-request-conflict" in err and differs in err
    assert other.stdout == b""
    assert _rows(setup["db"]) == held  # not even the other evidence was admitted
    twin = _accept(setup, "tests", "vuln")  # the identical one still replays
    assert twin.returncode == 0 and twin.stdout == first.stdout
