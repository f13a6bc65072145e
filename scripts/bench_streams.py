"""Peak memory of the factory while a provider floods stdout (issue 8 §5); run it through
``scripts/bench_streams``.

Cases, each in a fresh process so its peak RSS (``ru_maxrss`` of that process alone, the
CLIs it runs excluded) is its own:

1. ``runner``: ``factory.proc.run`` with stdout spooled to a file under a 64 MiB cap; the
   child writes 50 MB. Everything is kept, nothing held in memory.
2. ``agent-flood``: ``factory agent`` whose (fake) worker writes 50 MB of stream-json on
   stdout — over the 16 MiB cap: the run fails ``provider-output-limit`` and keeps the
   first 16 MiB as evidence, marked truncated with the true length.
3. ``agent-large``: ``factory agent`` whose worker writes 15 MB of valid stream-json
   (under the cap) and then edits a file; the reviewer approves. The parser reads the
   spooled stream line by line.

Target: peak RSS < 100 MB in every case. Usage: ``scripts/bench_streams [--reps N]``;
JSON on stdout (medians in MiB), exit 0 when every target is met.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MB = 1_000_000
TARGET_MIB = 100 * MB / (1 << 20)

FAKE_CLAUDE = r"""#!{python}
import json, sys
from pathlib import Path
args = sys.argv[1:]
if args == ["--version"]:
    print("2.1.332 (Claude Code)"); sys.exit(0)
if args[:2] == ["auth", "status"]:
    print(json.dumps({{"loggedIn": True}})); sys.exit(0)
sys.stdin.buffer.read()
total = int(Path(__file__).resolve().with_name("bytes").read_text())
out = sys.stdout
out.write(json.dumps({{"type": "system", "subtype": "init", "model": "fake"}}) + "\n")
event = json.dumps({{"type": "assistant", "message": {{"content": [
    {{"type": "text", "text": "z" * 99_900}}]}}}}) + "\n"
for _ in range(total // len(event)):
    out.write(event)
open("bench-edit.txt", "w").write("edited\n")
out.write(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
    "result": "done", "terminal_reason": "completed"}}) + "\n")
out.flush()
"""

FAKE_CODEX = r"""#!{python}
import json, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("codex-cli 0.171.0"); sys.exit(0)
if args[:2] == ["login", "status"]:
    print("Logged in", file=sys.stderr); sys.exit(0)
verdict = args[args.index("-o") + 1]
sys.stdin.buffer.read()
print(json.dumps({{"type": "turn.completed"}}))
open(verdict, "w").write(json.dumps({{"verdict": "APPROVE", "summary": "ok"}}))
"""

MEASURE = r"""
import resource, sys
sys.path.insert(0, sys.argv[1])
case = sys.argv[2]
if case == "runner":
    import trio
    from pathlib import Path
    from factory.proc import RunSpec, run
    code = "import sys\nfor _ in range(50):\n    sys.stdout.buffer.write(b'y' * 1_000_000)\n"
    spec = RunSpec(argv=[sys.executable, "-c", code], env={}, timeout_s=120,
                   stdout_cap=64 << 20, stdout_spool=Path(sys.argv[3]))
    res = trio.run(run, spec)
    assert res.out.kept_bytes == 50_000_000 and not res.out.truncated, res.out
    rc = 0
else:
    from factory.cli.main import main
    sys.stdout = open("/dev/null", "w")
    rc = main(sys.argv[3:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rc, file=sys.stderr)
"""


def _repo(base: Path) -> Path:
    def git(cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "bench")
    git(repo, "config", "user.email", "bench@factory.invalid")
    (repo / "README.md").write_text("bench\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "worktree", "add", "-q", "-b", "work", str(base / "wt"))
    return base / "wt"


def _fakes(base: Path, total_bytes: int) -> Path:
    folder = base / "fakebin"
    folder.mkdir()
    (folder / "bytes").write_text(str(total_bytes))  # the child env is allow-listed
    for name, body in (("claude", FAKE_CLAUDE), ("codex", FAKE_CODEX)):
        path = folder / name
        path.write_text(body.format(python=sys.executable))
        path.chmod(0o755)
    return folder


def measure(case: str) -> tuple[float, int]:
    """Peak RSS (MiB) of one fresh process running ``case``, and its exit code."""
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as tmp:
        base = Path(tmp)
        env = dict(os.environ)
        args = [str(base / "stdout.spool")]
        if case != "runner":
            wt = _repo(base)
            total = 50 * MB if case == "agent-flood" else 15 * MB
            env["PATH"] = f"{_fakes(base, total)}{os.pathsep}{env.get('PATH', '')}"
            out = base / "receipt.json"
            args = ["agent", "--worktree", str(wt), "--task", "bench", "--out", str(out)]
            args += ["--progress", "jsonl"]
        proc = subprocess.run(
            [sys.executable, "-c", MEASURE, str(ROOT), case, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        last = proc.stderr.strip().splitlines()[-1].split()
        return int(last[0]) / 1024, int(last[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="runs per case (default 3)")
    args = parser.parse_args()
    expected = {"runner": 0, "agent-flood": 4, "agent-large": 0}
    report: dict[str, object] = {"schema": "factory.bench-streams/1", "target_mib": TARGET_MIB}
    ok = True
    for case, want in expected.items():
        runs = [measure(case) for _ in range(args.reps)]
        peak = statistics.median(r[0] for r in runs)
        codes = sorted({r[1] for r in runs})
        report[case] = {"peak_rss_median_mib": round(peak, 1), "exit_codes": codes}
        ok = ok and peak < TARGET_MIB and codes == [want]
        print(f"{case}: peak RSS {peak:.1f} MiB (exit {codes}); target < 100 MB", file=sys.stderr)
    report["targets_met"] = ok
    print(json.dumps(report, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
