#!/usr/bin/env python3
"""Check factory's telemetry against a real OpenTelemetry backend: Arize Phoenix.

Run by hand (not in CI; it installs Phoenix from PyPI, about 500 MB):

    scripts/check_otel_backend [--venv DIR] [--phoenix-version V] [--keep]

1. installs Arize Phoenix into a scratch virtual environment (default
   state/check-otel/phoenix-venv, reused by later runs);
2. enters a private network namespace (``unshare --net``; only its own loopback exists,
   so nothing Phoenix opens — it also listens for gRPC on every interface — is reachable
   from outside, and every byte factory sends stays on 127.0.0.1);
3. starts Phoenix on 127.0.0.1 with a throw-away working folder;
4. runs ``factory demo --otel-endpoint http://127.0.0.1:PORT/v1/traces`` (completed), and
   ``factory agent --rehearsal`` with a reviewer that breaks the verdict schema (failed,
   ``provider-protocol``);
5. reads the spans back through Phoenix's REST API (``GET /v1/projects/default/spans``)
   and checks, for each run, that the trace id is the one in the receipt, that there is
   one root ``factory.agent.cycle`` span with the phase spans as its children, and the
   statuses: completed → every span OK; failed → the failing phase and the cycle ERROR with
   the error code as description.

Prints what Phoenix showed (one line per span) and exits 0 when every check held, 1 when
one failed, 2 for a usage or set-up problem.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FACTORY = REPO / ".venv" / "bin" / "factory"
PHOENIX_VERSION = "20.26.1"
PHASES = ("worker", "initial_review", "repair", "final_review")
INSIDE = "--inside-netns"


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="check_otel_backend",
        description="Send factory's spans to Arize Phoenix on 127.0.0.1 (in a private network "
        "namespace) and check through Phoenix's API that they arrived with the right parent/"
        "child tree and statuses. Run by hand; installs Phoenix into a scratch venv.",
    )
    p.add_argument(
        "--venv",
        type=Path,
        default=REPO / "state" / "check-otel" / "phoenix-venv",
        help="scratch venv for Phoenix (created if missing, reused otherwise)",
    )
    p.add_argument(
        "--phoenix-version",
        default=PHOENIX_VERSION,
        help=f"arize-phoenix version to install (default {PHOENIX_VERSION})",
    )
    p.add_argument("--keep", action="store_true", help="keep the run folder (demo, Phoenix data)")
    p.add_argument(INSIDE, dest="inside", metavar="RUN_DIR", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def say(text: str) -> None:
    print(f"check_otel_backend: {text}", file=sys.stderr, flush=True)


def install_phoenix(venv: Path, version: str) -> Path:
    phoenix = venv / "bin" / "phoenix"
    marker = venv / ".phoenix-version"
    if phoenix.exists() and marker.is_file() and marker.read_text().strip() == version:
        return phoenix
    say(f"installing arize-phoenix=={version} into {venv} (pip; this takes a while)")
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"arize-phoenix=={version}",
        ],
        check=True,
    )
    marker.write_text(version + "\n")
    return phoenix


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 (http to 127.0.0.1)
        return json.loads(resp.read())


def wait_until_up(base: str, proc: subprocess.Popen[bytes], timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"Phoenix exited early ({proc.returncode}); see its log")
        try:
            with urllib.request.urlopen(base + "/arize_phoenix_version", timeout=2) as r:  # noqa: S310
                return str(r.read().decode().strip())
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"Phoenix did not answer within {timeout:.0f}s")


def spans_of(base: str, trace_id: str, want: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        data = get_json(base + "/v1/projects/default/spans?limit=1000")["data"]
        found = [s for s in data if s["context"]["trace_id"] == trace_id]
        if len(found) >= want:
            return found
        time.sleep(0.5)
    return found


def failing_scenario(folder: Path) -> Path:
    path = folder / "failing-scenario.json"
    path.write_text(
        json.dumps(
            {
                "schema": "factory.rehearsal-scenario/1",
                "description": "the reviewer answers outside the verdict schema",
                "invocations": [
                    {
                        "role": "worker",
                        "tool_calls": [
                            {"tool": "Write", "file_path": "notes.txt", "content": "hi\n"}
                        ],
                        "final_message": "Wrote notes.txt.",
                    },
                    {"role": "reviewer", "tool_calls": [], "final_message": "looks fine to me"},
                ],
            }
        )
    )
    return path


def sample_worktree(folder: Path) -> Path:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "check",
        "GIT_AUTHOR_EMAIL": "c@x",
        "GIT_COMMITTER_NAME": "check",
        "GIT_COMMITTER_EMAIL": "c@x",
    }
    repo = folder / "repo"
    repo.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["commit", "-q", "--allow-empty", "-m", "base"],
        ["worktree", "add", "-q", "-b", "work", str(folder / "wt")],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return folder / "wt"


def describe(spans: list[dict[str, Any]]) -> list[str]:
    by_id = {s["context"]["span_id"]: s for s in spans}
    lines = []
    for s in sorted(spans, key=lambda s: s["start_time"]):
        parent = (
            by_id.get(s["parent_id"] or "", {}).get("name", "-") if s["parent_id"] else "(root)"
        )
        msg = f" {s['status_message']!r}" if s.get("status_message") else ""
        attrs = {k: v for k, v in s["attributes"].items() if k.startswith("factory.")}
        lines.append(
            f"  {s['name']:<30} parent={parent:<22} status={s['status_code']}{msg} {attrs}"
        )
    return lines


def check_tree(
    spans: list[dict[str, Any]], phases: tuple[str, ...], failing: str | None, code: str | None
) -> list[str]:
    problems = []
    roots = [s for s in spans if not s["parent_id"]]
    if len(roots) != 1 or roots[0]["name"] != "factory.agent.cycle":
        return [f"expected one root factory.agent.cycle span, got {[r['name'] for r in roots]}"]
    root = roots[0]
    children = {s["name"]: s for s in spans if s["parent_id"] == root["context"]["span_id"]}
    want = {f"factory.agent.{p}" for p in phases}
    if set(children) != want or len(spans) != len(want) + 1:
        problems.append(f"children {sorted(children)} != {sorted(want)}")
    for name, span in children.items():
        bad = failing is not None and name == f"factory.agent.{failing}"
        expected = ("ERROR", code) if bad else ("OK", None)
        if (span["status_code"], span.get("status_message") or None) != expected:
            problems.append(
                f"{name}: status {span['status_code']} {span.get('status_message')!r}"
                f", expected {expected}"
            )
    expected_root = ("ERROR", code) if failing else ("OK", None)
    if (root["status_code"], root.get("status_message") or None) != expected_root:
        problems.append(
            f"cycle: status {root['status_code']} {root.get('status_message')!r}, "
            f"expected {expected_root}"
        )
    return problems


def inside(run_dir: Path, phoenix: Path) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    port, grpc = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(run_dir / "phoenix"),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (run_dir / "phoenix.log").open("wb")
    server = subprocess.Popen([str(phoenix), "serve"], env=env, stdout=log, stderr=log)
    failures: list[str] = []
    try:
        version = wait_until_up(base, server)
        say(f"Phoenix {version} is up on {base} (private network namespace)")
        endpoint = f"{base}/v1/traces"
        demo = run_dir / "demo"
        proc = subprocess.run(
            [str(FACTORY), "demo", "--dir", str(demo), "--json", "--otel-endpoint", endpoint],
            capture_output=True,
            check=False,
        )
        receipt = json.loads((demo / "receipt.json").read_bytes())
        runs: list[tuple[str, Any, tuple[str, ...], str | None, Any, int, int]] = [
            ("demo (completed)", receipt, PHASES, None, None, proc.returncode, 0)
        ]
        out = run_dir / "failing.receipt.json"
        proc = subprocess.run(
            [
                str(FACTORY),
                "agent",
                "--worktree",
                str(sample_worktree(run_dir)),
                "--task",
                "write notes",
                "--out",
                str(out),
                "--rehearsal",
                str(failing_scenario(run_dir)),
                "--otel-endpoint",
                endpoint,
                "--timeout-ms",
                "60000",
            ],
            capture_output=True,
            check=False,
        )
        failed = json.loads(out.read_bytes())
        code = (failed.get("error") or {}).get("code")
        runs.append(
            ("agent (failed)", failed, PHASES[:2], "initial_review", code, proc.returncode, 4)
        )
        for label, rec, phases, failing, err, rc, want_rc in runs:
            trace_id = rec.get("trace_id")
            say(f"{label}: exit {rc}, status {rec['status']}, trace id {trace_id}")
            if rc != want_rc:
                failures.append(f"{label}: exit {rc}, expected {want_rc}")
            if not trace_id:
                failures.append(f"{label}: the receipt has no trace_id")
                continue
            spans = spans_of(base, trace_id, len(phases) + 1)
            print(f"{label}: Phoenix holds {len(spans)} span(s) for trace {trace_id}")
            print("\n".join(describe(spans)))
            failures += [f"{label}: {p}" for p in check_tree(spans, phases, failing, err)]
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    for f in failures:
        print(f"FAILED {f}")
    print("all checks held" if not failures else f"{len(failures)} check(s) failed")
    return 0 if not failures else 1


def main(argv: list[str]) -> int:
    args = parse(argv)
    phoenix = args.venv / "bin" / "phoenix"
    if args.inside:
        return inside(Path(args.inside), phoenix)
    if not FACTORY.exists():
        say("run ./scripts/setup first (no .venv/bin/factory)")
        return 2
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        say("needs unshare (util-linux) and ip (iproute2) for the private network namespace")
        return 2
    phoenix = install_phoenix(args.venv.resolve(), args.phoenix_version)
    run_dir = Path(tempfile.mkdtemp(prefix="check-otel-", dir=args.venv.resolve().parent))
    ns = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--net", "--map-root-user"]
    try:
        return subprocess.run(
            [
                *ns,
                sys.executable,
                str(Path(__file__).resolve()),
                "--venv",
                str(args.venv.resolve()),
                INSIDE,
                str(run_dir),
            ],
            check=False,
        ).returncode
    finally:
        if args.keep:
            say(f"kept {run_dir}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
