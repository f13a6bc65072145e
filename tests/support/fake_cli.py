"""Fast fake ``claude`` and ``codex`` executables emulating the real CLIs' formats.

Each fake is a small Python program (``#!<this interpreter>``) written into a temp folder
that tests put first on ``PATH``. The child environment is scrubbed by the profiles, so a
fake reads its behaviour from ``mode.json`` beside itself, and writes one record per
process (argv, env, pid, create time) into ``records/`` — the tests use those records to
check what arrived and that every process the fake started is gone.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

_COMMON = r'''
import json, os, signal, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
MODE = json.loads((HERE / "mode.json").read_text()).get(NAME, "ok")
REC = HERE / "records"

def record(kind, **extra):
    import psutil
    me = psutil.Process()
    doc = {"kind": kind, "name": NAME, "pid": os.getpid(), "create_time": me.create_time(),
           "argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(), **extra}
    REC.mkdir(exist_ok=True)
    tmp = REC / f".{os.getpid()}-{kind}.tmp"
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, REC / f"{os.getpid()}-{kind}.json")  # readers never see half a record

def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def read_stdin():
    data = b""
    for chunk in iter(lambda: sys.stdin.buffer.read(65536), b""):
        data += chunk
    return data

def spawn_stubborn(level=0):
    """A child in a new session that ignores SIGTERM, re-forks on it, and forks more."""
    pid = os.fork()
    if pid:
        return pid
    os.setsid()
    made = [0]
    def on_term(signum, frame):
        if made[0] < 6:
            made[0] += 1
            spawn_stubborn(level + 1)
    signal.signal(signal.SIGTERM, on_term if level == 0 else signal.SIG_IGN)
    record(f"stubborn{level}")
    while True:
        if level == 0 and made[0] < 3:
            made[0] += 1
            spawn_stubborn(level + 1)
        time.sleep(0.05)

def forever():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)
'''

_CLAUDE = r"""
args = sys.argv[1:]
if args == ["--version"]:
    record("version"); print("2.1.332 (Claude Code)"); sys.exit(0)
if args[:2] == ["auth", "status"]:
    record("auth")
    ok = MODE != "not-logged-in"
    print(json.dumps({"loggedIn": ok, "authMethod": "claude.ai" if ok else "none"}))
    sys.exit(0 if ok else 1)
prompt = read_stdin()
record("run", prompt=prompt.decode())
init = {"type": "system", "subtype": "init", "cwd": os.getcwd(), "model": "fake",
        "permissionMode": "acceptEdits", "apiKeySource": "none", "claude_code_version": "2.1.332"}
def result(**kw):
    doc = {"type": "result", "subtype": "success", "is_error": False, "result": "done",
           "terminal_reason": "completed", "num_turns": 1, "total_cost_usd": 0}
    doc.update(kw); out(doc)
if MODE in ("ok", "not-logged-in-run"):
    out(init)
if MODE == "ok":
    # mode.json may name the files the worker writes (path -> text); the default is one file.
    edits = json.loads((HERE / "mode.json").read_text()).get("claude_files")
    for rel, text in (edits or {"worker-was-here.txt": "edited\n"}).items():
        Path(rel).parent.mkdir(parents=True, exist_ok=True)
        Path(rel).write_text(text)
    out({"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}})
    result(); sys.exit(0)
if MODE in ("not-logged-in", "not-logged-in-run"):
    out({"type": "assistant", "error": "authentication_failed", "is_api_error_message": True})
    result(is_error=True, result="Not logged in · Please run /login", terminal_reason="api_error",
           api_error_status=None)
    sys.exit(1)
if MODE == "is-error-exit0":
    result(is_error=True, result="API Error: 500 overloaded", terminal_reason="api_error",
           api_error_status=500)
    sys.exit(0)
if MODE == "connection-failed":
    result(is_error=True, result="API Error: Connection refused (ECONNREFUSED)",
           terminal_reason="api_error", api_error="connection_failed")
    sys.exit(1)
if MODE == "retry-storm":
    out(init)
    n = 0
    while True:
        n += 1
        out({"type": "system", "subtype": "api_retry", "attempt": n, "max_retries": 10,
             "retry_delay_ms": 100, "error_status": None, "error": "unknown"})
        time.sleep(0.1)
if MODE == "big-line":
    chunk = "x" * (1 << 20)
    for _ in range(50):
        sys.stdout.write(chunk)
    sys.stdout.write("\n"); sys.stdout.flush(); sys.exit(0)
if MODE == "close-stdout":
    os.close(1); os.close(2)
    forever()
if MODE == "stubborn-tree":
    out(init)
    spawn_stubborn()
    spawn_stubborn()
    forever()
if MODE == "no-result":
    out(init); sys.exit(0)
if MODE == "stderr-flood":  # 3 MB of diagnostics, then an ordinary successful run
    for _ in range(3):
        sys.stderr.write("d" * 1_000_000)
    sys.stderr.flush()
    out(init)
    Path("worker-was-here.txt").write_text("edited\n")
    result(); sys.exit(0)
if MODE == "stdout-flood":  # 20 MB of events: over the 16 MiB stdout cap
    out(init)
    event = json.dumps({"type": "assistant", "message": {"content": [
        {"type": "text", "text": "z" * 100_000}]}}) + "\n"
    for _ in range(200):
        sys.stdout.write(event)
    sys.stdout.flush()
    result(); sys.exit(0)
if MODE == "leftover":  # a successful run leaving a daemon that writes later
    out(init)
    Path("worker-was-here.txt").write_text("edited\n")
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            record("leftover")
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(1.0)
            Path("late.txt").write_text("acted after the leader\n")
            os._exit(0)
        os._exit(0)
    time.sleep(0.2)
    result(); sys.exit(0)
if MODE == "hang":  # started, then never answers (with a helper process beside it)
    out(init)
    if os.fork() == 0:
        record("helper")
        forever()
    forever()
if MODE == "late-grandchild":  # the issue's example: writes 2.5 s after it started
    out(init)
    at = time.time() + 2.5
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            record("grandchild")
            while time.time() < at:
                time.sleep(0.01)
            Path("late.txt").write_text("acted after the deadline\n")
            os._exit(0)
        os._exit(0)
    forever()
sys.exit(3)
"""

_CODEX = r"""
args = sys.argv[1:]
if args == ["--version"]:
    record("version"); print("codex-cli 0.171.0"); sys.exit(0)
if args[:2] == ["login", "status"]:
    record("login")
    if MODE == "not-logged-in":
        print("Not logged in", file=sys.stderr); sys.exit(1)
    print("Logged in using ChatGPT", file=sys.stderr); sys.exit(0)
if args[:1] == ["sandbox"]:
    record("sandbox")
    cmd = args[args.index("--") + 1:]
    if MODE == "sandbox-broken":
        print("bwrap: No permissions to create new namespace", file=sys.stderr); sys.exit(1)
    if Path(cmd[0]).name == "touch":
        print(f"touch: cannot touch '{cmd[1]}': Read-only file system", file=sys.stderr)
        sys.exit(1)
    os.execv(cmd[0], cmd)
if args[:1] != ["exec"]:
    print("error: unexpected argument", file=sys.stderr); sys.exit(2)
verdict_file = Path(args[args.index("-o") + 1])
schema_file = Path(args[args.index("--output-schema") + 1])
print("Reading additional input from stdin...", file=sys.stderr, flush=True)
prompt = read_stdin()
record("run", prompt=prompt.decode(), schema=json.loads(schema_file.read_text()))
verdict_file.write_text("")
out({"type": "thread.started", "thread_id": "t-1"})
out({"type": "turn.started"})
def finish(text):
    out({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}})
    out({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}})
    verdict_file.write_text(text)
    sys.exit(0)
if MODE == "ok":
    finish(json.dumps({"verdict": "APPROVE", "summary": "looks right"}))
if MODE == "bad-verdict":
    finish(json.dumps({"verdict": "LGTM", "summary": "fine"}))
if MODE == "extra-key":
    finish(json.dumps({"verdict": "APPROVE", "summary": "fine", "confidence": 0.9}))
if MODE == "canned":  # answer with the bytes of canned.txt beside the fake (review lenses)
    finish((HERE / "canned.txt").read_text())
if MODE == "canned-after-go":  # answer only once the test creates go.txt (a run in flight)
    while not (HERE / "go.txt").exists():
        time.sleep(0.02)
    finish((HERE / "canned.txt").read_text())
if MODE == "prose-verdict":
    finish("I approve this change.")
if MODE == "unauthorized":
    for i in range(1, 3):
        out({"type": "error",
             "message": f"Reconnecting... {i}/5 (unexpected status 401 Unauthorized)"})
    out({"type": "turn.failed",
         "error": {"message": "unexpected status 401 Unauthorized: Incorrect API key"}})
    sys.exit(1)
if MODE == "network-loss":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        out({"type": "error", "message": "Reconnecting... waiting for network "
                                         "(Connection failed: error sending request)"})
        time.sleep(0.2)
if MODE == "stubborn-tree":
    spawn_stubborn()
    forever()
sys.exit(3)
"""


@dataclass
class Fakes:
    """A folder with fake ``claude`` and ``codex``; put :attr:`bin` first on PATH."""

    bin: Path

    def mode(self, **modes: object) -> None:
        """Set behaviours, e.g. ``mode(claude="retry-storm", codex="ok")``; ``claude_files``
        (path → text) names the files the ``ok`` worker writes."""
        (self.bin / "mode.json").write_text(json.dumps(modes))

    def records(self, kind: str | None = None) -> list[dict[str, object]]:
        """Every record written so far (optionally of one kind), oldest first."""
        folder = self.bin / "records"
        if not folder.is_dir():
            return []
        docs = [json.loads(p.read_text()) for p in folder.glob("*.json")]
        docs.sort(key=lambda d: float(d["create_time"]))
        return [d for d in docs if kind is None or d["kind"] == kind]

    def clear(self) -> None:
        for p in (self.bin / "records").glob("*.json"):
            p.unlink()

    def survivors(self) -> list[dict[str, object]]:
        """Recorded processes that still exist (a zombie counts: it is not reaped yet)."""
        alive = []
        for doc in self.records():
            try:
                proc = psutil.Process(int(doc["pid"]))  # type: ignore[call-overload]
                same = abs(proc.create_time() - float(doc["create_time"])) < 0.02  # type: ignore[arg-type]
            except psutil.NoSuchProcess:
                continue
            if same:
                alive.append(doc)
        return alive

    def wait_records(self, kind: str, count: int, timeout: float = 5.0) -> None:
        """Wait until at least ``count`` records of ``kind`` exist; fail the test (with what
        was seen) when ``timeout`` seconds pass first, so a fake that never started is
        reported here and not as a puzzling assertion later."""
        end = time.monotonic() + timeout
        while len(self.records(kind)) < count:
            if time.monotonic() >= end:
                seen = len(self.records(kind))
                raise AssertionError(
                    f"fake CLI: {seen} {kind!r} record(s) after {timeout:g} s, wanted {count}"
                )
            time.sleep(0.02)


def install_fakes(folder: Path) -> Fakes:
    """Write fake ``claude`` and ``codex`` into ``folder`` (created) and return a handle."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in (("claude", _CLAUDE), ("codex", _CODEX)):
        path = folder / name
        path.write_text(f"#!{sys.executable}\nNAME = {name!r}\n{_COMMON}\n{body}")
        path.chmod(0o755)
    fakes = Fakes(folder)
    fakes.mode()
    return fakes
