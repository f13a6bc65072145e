"""Benchmark the operator path (issue 11, "Speed").

Targets on the 2-core machine:

* ``factory operator plan`` over 1,000 open issues on the loopback forge emulation (10 pages
  of 100) ≤ 1 s — measured as the whole command (a fresh process) and as the in-process read;
* the authorized part of ``operator publish`` (from the moment the passphrase is entered to
  the terminal receipt: unlock, sign, re-observe, consume, commit, push, pull request)
  ≤ 1 s plus the push — the push is timed separately, over ``git http-backend`` and
  ``file://``;
* the KDF's unlock time of a key made by ``operator keygen`` (PBKDF2-HMAC-SHA256, 600,000
  iterations), stated, not targeted.

Usage: ``scripts/bench_operator [--reps N] [--issues N]``. Prints one JSON object (medians
in seconds). Everything runs on 127.0.0.1 in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.bench import isolate as _isolate  # noqa: E402


def bench_plan(issues: int, reps: int) -> dict[str, Any]:
    from factory.operator.forge_client import Forge, read_forge
    from tests.operator.helpers import REPO, TOKEN
    from tests.support.forge import serve_forge

    with serve_forge() as forge:
        for number in range(1, issues + 1):
            forge.state.add_issue(REPO, number, f"issue {number}")
        command, inproc = [], []
        env = {**os.environ, "GH_TOKEN": TOKEN}
        argv = [sys.executable, "-m", "factory", "operator", "plan", "--repository", REPO,
                "--forge-url", forge.url]  # fmt: skip
        for _ in range(reps):
            start = time.perf_counter()
            proc = subprocess.run(argv, env=env, capture_output=True, check=False)
            command.append(time.perf_counter() - start)
            assert proc.returncode == 0, proc.stderr
            start = time.perf_counter()
            with Forge(forge.url, TOKEN) as client:
                read_forge(client, REPO, "factory")
            inproc.append(time.perf_counter() - start)
        pages = len(forge.state.calls("GET", "/issues")) // (2 * reps)
    return {
        "issues": issues,
        "pages_per_read": pages,
        "command_s": statistics.median(command),
        "in_process_read_s": statistics.median(inproc),
        "target_s": 1.0,
    }


def bench_publish(tmp: Path, http: bool) -> dict[str, Any]:
    from factory.operator import adapter
    from factory.operator.publish_flow import PublishFlow
    from factory.operator.session import operate
    from tests.operator.helpers import REPO, ScriptedTerminal, make_world
    from tests.support.forge import serve_forge
    from tests.support.git_remote import serve_http

    marks: dict[str, float] = {}
    real_push = adapter.push

    def timed_push(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return real_push(*args)
        finally:
            marks["push"] = time.perf_counter() - start

    def entered() -> None:
        marks["passphrase"] = time.perf_counter()

    (tmp / "remotes").mkdir(parents=True)
    with serve_forge() as forge, serve_http(tmp / "remotes") as remote:
        forge.state.repo(REPO)
        world = make_world(tmp, forge, remote if http else None)
        flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
        authority = world.authority()
        adapter.push = timed_push  # type: ignore[assignment]
        try:
            result = operate(
                world.out(), flow, lambda: (ScriptedTerminal(before_secret=entered), authority)
            )
        finally:
            adapter.push = real_push
        end = time.perf_counter()
    assert result.exit_code == 0, result.diagnostic
    authorized = end - marks["passphrase"]
    return {
        "remote": "git http-backend" if http else "file://",
        "authorized_s": authorized,
        "push_s": marks["push"],
        "authorized_minus_push_s": authorized - marks["push"],
        "target_minus_push_s": 1.0,
    }


def bench_unlock(tmp: Path, reps: int) -> dict[str, Any]:
    from factory.operator import keys

    pair = keys.KeyPair(tmp / "k.pem", tmp / "k.pub")
    phrase = b"benchmark passphrase 1234"
    start = time.perf_counter()
    keys.generate(pair, phrase)
    generate = time.perf_counter() - start
    pem, public = keys.read_private(pair.private), keys.load_public(pair.public)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        keys.unlock(pem, phrase, public)
        times.append(time.perf_counter() - start)
    return {
        "kdf": keys.KDF_DESCRIPTION,
        "unlock_s": statistics.median(times),
        "keygen_s": generate,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench_operator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--reps", type=int, default=5, help="repetitions (median reported)")
    parser.add_argument("--issues", type=int, default=1000, help="open issues on the forge")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="factory-bench-operator-"))
    try:
        (tmp / "home").mkdir()
        _isolate(tmp / "home")
        report = {
            "schema": "factory.bench-operator/1",
            "plan": bench_plan(args.issues, args.reps),
            "publish": [bench_publish(tmp / "http", True), bench_publish(tmp / "file", False)],
            "unlock": bench_unlock(tmp, args.reps),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
