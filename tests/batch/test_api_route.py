"""``factory batch run --credentials-env NAME``: every task's CLIs get the named keys and
nothing of the caller's environment (the sentinel test, through the batch and its children);
the report and every receipt say ``api`` and hold no key. Fake provider CLIs on PATH."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.batch.helpers import repo_and_tasks
from tests.support.cli import run_factory
from tests.support.fake_cli import install_fakes
from tests.support.sentinels import FAMILIES, SENTINEL

KEYS = {"anthropic_api_key": "sk-ant-batch-0001", "codex_api_key": "sk-codex-batch-0001"}


def test_the_named_keys_and_nothing_else_reach_every_task(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 2)
    fakes = install_fakes(tmp_path / "fakebin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({name: f"{SENTINEL}-{name}" for name in FAMILIES if not name.startswith("GIT_")})
    env["PATH"] = f"{fakes.bin}{os.pathsep}{env['PATH']}"
    env["BATCH_KEYS"] = json.dumps(KEYS)
    out = tmp_path / "out"
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out), "--jobs", "2"]
    argv += ["--progress", "jsonl", "--min-free-mb", "0", "--credentials-env", "BATCH_KEYS"]
    proc = run_factory(argv, env=env, timeout=600)
    assert proc.returncode in (0, 3, 4), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["route"] == "api" and len(report["tasks"]) == 2
    runs = [r for r in fakes.records() if r["kind"] == "run"]
    assert {r["name"] for r in runs} >= {"claude"}
    for rec in fakes.records():
        child = rec["env"]
        assert isinstance(child, dict)
        leaked = sorted(k for k, v in child.items() if SENTINEL in str(v))
        assert leaked == [], f"{rec['name']} {rec['kind']} received {leaked}"
        assert "BATCH_KEYS" not in child  # the document itself never reaches a CLI
        if rec["name"] == "claude" and rec["kind"] == "run":
            assert child["ANTHROPIC_API_KEY"] == KEYS["anthropic_api_key"]
        if rec["name"] == "codex" and rec["kind"] == "run":
            assert child["CODEX_API_KEY"] == KEYS["codex_api_key"]
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert all(v.encode() not in data for v in KEYS.values()), path


@pytest.mark.parametrize("extra", [["--credentials-env", "UNSET_1"], ["--rehearsal", "x.json"]])
def test_credentials_are_checked_before_anything(tmp_path: Path, extra: list[str]) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEYS))
    keys.chmod(0o600)
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(tmp_path / "out"),
            "--min-free-mb", "0", "--credentials", str(keys), *extra]  # fmt: skip
    if extra[0] == "--credentials-env":
        argv.remove("--credentials")
        argv.remove(str(keys))
    proc = run_factory(argv)
    assert proc.returncode == 2 and b"factory: credentials-" in proc.stderr
    assert not (tmp_path / "out").exists()
