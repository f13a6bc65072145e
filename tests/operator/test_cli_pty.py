"""``factory operator`` at a real pseudo-terminal (pexpect): a person types the revision and
the passphrase; the screen is checked. Plus the ways a pipe or a flag cannot authorize."""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.operator.helpers import PASSPHRASE, REPO, TOKEN, env_with, make_keys
from tests.operator.pty import PASS_PROMPT, REV_PROMPT, REVISION, Screen, authorize  # noqa: F401
from tests.support.cli import run_factory
from tests.support.fake_cli import Fakes, install_fakes
from tests.support.forge import LoopbackForge
from tests.support.git import add_linked_worktree, git, init_repo


@dataclass
class Desk:
    """An operator's desk: a clean linked worktree, keys, the forge, fake provider CLIs."""

    tmp: Path
    repo: Path
    wt: Path
    forge: LoopbackForge
    fakes: Fakes
    private: Path
    public: Path

    @property
    def ledger(self) -> Path:
        return self.tmp / "ledger"

    def env(self) -> dict[str, str]:
        return env_with(self.fakes, GH_TOKEN=TOKEN)

    def run_args(self, out: Path, *extra: str) -> list[str]:
        return [
            "operator", "run", "--repository", REPO, "--forge-url", self.forge.url,
            "--worktree", str(self.wt), "--private-key", str(self.private),
            "--public-key", str(self.public), "--ledger", str(self.ledger), "--out", str(out),
            "--timeout-ms", "20000", *extra,
        ]  # fmt: skip


@pytest.fixture
def desk(tmp_path: Path, forge: LoopbackForge) -> Desk:
    repo = init_repo(tmp_path / "repo", {"README.md": "sample\n"})
    git(repo, "config", "user.name", "Ada Operator")
    git(repo, "config", "user.email", "ada@factory.invalid")
    wt = add_linked_worktree(repo, tmp_path / "wt")
    private, public = make_keys(tmp_path / "keys")
    (tmp_path / "out").mkdir()
    return Desk(tmp_path, repo, wt, forge, install_fakes(tmp_path / "fakebin"), private, public)


def receipt(path: Path) -> dict[str, object]:
    value: dict[str, object] = json.loads(path.read_bytes())
    return value


def test_keygen_at_a_terminal(tmp_path: Path) -> None:
    p, q = tmp_path / "op.key", tmp_path / "op.pub"
    screen = Screen(
        ["operator", "keygen", "--private-key", str(p), "--public-key", str(q)], dict(os.environ)
    )
    screen.expect("New passphrase: ")
    screen.child.sendline(PASSPHRASE)
    screen.expect("Same passphrase again: ")
    screen.child.sendline(PASSPHRASE)
    assert screen.finish() == 0
    assert PASSPHRASE not in screen.text  # echo was off
    assert oct(p.stat().st_mode & 0o777) == oct(q.stat().st_mode & 0o777) == "0o600"
    doc = json.loads(screen.text.split(b"\n", 3)[-1].strip().splitlines()[-1])
    assert doc["schema"] == "factory.operator-key/1" and "600000" in doc["kdf"]


@pytest.mark.parametrize(
    ("first", "second", "code"),
    [
        (b"short", None, b"passphrase-too-short"),
        (PASSPHRASE, b"another long passphrase", b"passphrase-mismatch"),
    ],
)
def test_keygen_refusals_create_nothing(
    tmp_path: Path, first: bytes, second: bytes | None, code: bytes
) -> None:
    p, q = tmp_path / "op.key", tmp_path / "op.pub"
    screen = Screen(
        ["operator", "keygen", "--private-key", str(p), "--public-key", str(q)], dict(os.environ)
    )
    screen.expect("New passphrase: ")
    screen.child.sendline(first)
    if second is not None:
        screen.expect("Same passphrase again: ")
        screen.child.sendline(second)
    assert screen.finish() == 2
    assert code in screen.text
    assert not p.exists() and not q.exists()


def test_keygen_from_a_pipe_is_refused(tmp_path: Path) -> None:
    proc = run_factory(
        [
            "operator",
            "keygen",
            "--private-key",
            str(tmp_path / "k"),
            "--public-key",
            str(tmp_path / "p"),
        ],
        input=PASSPHRASE + b"\n" + PASSPHRASE + b"\n",
    )
    assert proc.returncode == 2 and b"tty-required" in proc.stderr
    assert not (tmp_path / "k").exists()


def test_run_at_a_terminal_then_publish_it(desk: Desk, tmp_path: Path) -> None:
    from tests.support.git_remote import bare_from, remote_state

    desk.forge.state.add_issue(REPO, 12, "Fix the widget")
    desk.forge.state.add_issue(REPO, 15, "Later work")
    out = tmp_path / "out" / "run.json"
    screen = Screen(desk.run_args(out), desk.env())
    assert authorize(screen) == 0, screen.text.decode(errors="replace")
    doc = receipt(out)
    assert doc["status"] == "executed" and doc["exit_code"] == 0
    agent_path = out.with_name("run.json.agent.json")
    agent = receipt(agent_path)
    assert agent["status"] == "completed"
    assert str(agent["task"]).startswith(f"Resolve {REPO}#12.\n")
    assert doc["agent_run"]["path"] == agent_path.name  # type: ignore[index]
    assert b"issue #12" in screen.text and b"untrusted: data from the forge" in screen.text
    # The token reached no provider process, and is in no file we wrote.
    for record in desk.fakes.records():
        assert TOKEN not in json.dumps(record)
    for path in (out, agent_path, desk.ledger):
        blobs = [path.read_bytes()] if path.is_file() else [p.read_bytes() for p in path.iterdir()]
        assert all(TOKEN.encode() not in b and PASSPHRASE not in b for b in blobs)
    verified = run_factory(["operator", "verify", str(out), "--public-key", str(desk.public)])
    assert verified.returncode == 0, verified.stdout

    # Publish what the run produced, over a file:// remote, from the operator receipt.
    bare = bare_from(desk.repo, tmp_path / "widgets.git")
    git(desk.repo, "remote", "add", "origin", bare.as_uri())
    desk.forge.state.repo(REPO).git_remote = bare
    pub_out = tmp_path / "out" / "publish.json"
    store = tmp_path / "gate.sqlite3"
    args = [
        "operator", "publish", "--receipt", str(out), "--repository", REPO, "--remote",
        "origin", "--forge-url", desk.forge.url, "--private-key", str(desk.private),
        "--public-key", str(desk.public), "--ledger", str(desk.ledger), "--store", str(store),
    ]  # fmt: skip
    status_before = git(desk.wt, "status", "--porcelain=v2", "-z", "--untracked-files=all")
    # Without an accepted decision-gate run the operator refuses before any prompt...
    screen = Screen([*args, "--out", str(tmp_path / "out" / "no-gate.json")], desk.env())
    assert screen.finish() == 2
    refused = receipt(tmp_path / "out" / "no-gate.json")
    assert refused["refusal"] == {"stage": "intent", "code": "gate-not-accepted"}
    assert not store.exists()  # looking for a run created nothing
    # ...and 'factory publish' runs the gate (the test command here: exit 0) and publishes.
    args[1] = "publish"
    del args[0]
    test = ["--test", "--", sys.executable, "-c", "raise SystemExit(0)"]
    screen = Screen([*args, "--out", str(pub_out), *test], desk.env())
    assert authorize(screen) == 0, screen.text.decode(errors="replace")
    pub = receipt(pub_out)["publication"]
    assert pub["branch"].startswith("factory/issue-12-")  # type: ignore[index]
    created = desk.forge.state.calls("POST", "/pulls")
    assert len(created) == 1 and "Closes #12" in created[0].body["body"]
    assert pub["commit"] in remote_state(bare)["refs"]  # type: ignore[index]
    assert git(desk.wt, "status", "--porcelain=v2", "-z", "--untracked-files=all") == status_before
    assert b"never merge" in screen.text
    verified = run_factory(["operator", "verify", str(pub_out), "--public-key", str(desk.public)])
    assert verified.returncode == 0, verified.stdout


@pytest.mark.parametrize(
    ("at", "key", "code"),
    [
        ("revision", "\x03", "prompt-cancelled"),
        ("revision", "\x04", "confirmation-closed"),
        ("passphrase", "\x03", "prompt-cancelled"),
        ("passphrase", "\x04", "passphrase-closed"),
    ],
)
def test_abandoning_a_prompt_is_a_named_refusal(desk: Desk, at: str, key: str, code: str) -> None:
    desk.forge.state.add_issue(REPO, 3, "Something")
    out = desk.tmp / "out" / "op.json"
    screen = Screen(desk.run_args(out), desk.env())
    screen.expect(REV_PROMPT)
    if at == "passphrase":
        screen.child.sendline(screen.revision())
        screen.expect(PASS_PROMPT)
    screen.child.send(key)
    assert screen.finish() == 2
    doc = receipt(out)
    stage = "confirm" if at == "revision" else "unlock"
    assert doc["status"] == "refused" and doc["refusal"] == {"stage": stage, "code": code}
    assert desk.fakes.records("run") == []
    assert git(desk.wt, "status", "--porcelain") == ""


def test_wrong_passphrase_and_wrong_revision_at_the_terminal(desk: Desk) -> None:
    desk.forge.state.add_issue(REPO, 3, "Something")
    out = desk.tmp / "out" / "a.json"
    screen = Screen(desk.run_args(out), desk.env())
    assert authorize(screen, b"this is not the passphrase") == 2
    assert receipt(out)["refusal"] == {"stage": "unlock", "code": "passphrase-wrong"}
    assert b"this is not the passphrase" not in screen.text
    out = desk.tmp / "out" / "b.json"
    screen = Screen(desk.run_args(out), desk.env())
    screen.expect(REV_PROMPT)
    screen.child.sendline(screen.revision()[:-1])
    assert screen.finish() == 2
    assert receipt(out)["refusal"] == {"stage": "confirm", "code": "confirmation-mismatch"}
    assert desk.fakes.records("run") == []


def test_a_forge_change_after_the_screen_is_snapshot_stale(desk: Desk) -> None:
    desk.forge.state.add_issue(REPO, 3, "Something")
    out = desk.tmp / "out" / "op.json"
    screen = Screen(desk.run_args(out), desk.env())
    screen.expect(REV_PROMPT)
    desk.forge.state.add_issue(REPO, 9, "Filed while the operator was reading")
    screen.child.sendline(screen.revision())
    screen.expect(PASS_PROMPT)
    screen.child.sendline(PASSPHRASE)
    assert screen.finish() == 2
    doc = receipt(out)
    assert doc["refusal"] == {"stage": "grant", "code": "snapshot-stale"} and doc["grant"] is None
    assert desk.fakes.records("run") == [] and not list(desk.ledger.iterdir())


def test_a_pipe_cannot_authorize(desk: Desk) -> None:
    desk.forge.state.add_issue(REPO, 3, "Something")
    out = desk.tmp / "out" / "op.json"
    proc = run_factory(
        desk.run_args(out), input=b"sha256:whatever\n" + PASSPHRASE + b"\n", env=desk.env()
    )
    assert proc.returncode == 2 and b"tty-required" in proc.stderr
    doc = receipt(out)
    assert doc["refusal"] == {"stage": "admission", "code": "tty-required"}
    assert desk.fakes.records("run") == [] and desk.forge.state.requests == []


@pytest.mark.parametrize(
    "flag", [["--passphrase", "x"], ["--revision", "sha256:0"], ["--pass", "x"], ["--yes"]]
)
def test_no_flag_supplies_authority(desk: Desk, flag: list[str]) -> None:
    out = desk.tmp / "out" / "op.json"
    proc = run_factory(desk.run_args(out, *flag), env=desk.env())
    assert proc.returncode == 2 and b"usage" in proc.stderr
    assert not out.exists()


HOSTILE = [
    ("csi-clear", "\x1b[2J\x1b[Hall clear", [b"\x1b[2J"]),
    ("cursor-up", "ok\x1b[1A\x1b[2Kfake line", [b"\x1b[1A"]),
    ("osc8-link", "\x1b]8;;https://evil.invalid\x07click\x1b]8;;\x07", [b"\x1b]8"]),
    ("c1-csi", "x\x9b2Jy", ["\x9b".encode()]),
    ("rlo", "invoice\u202egnp.exe", ["\u202e".encode()]),
    ("isolates", "a\u2066b\u2067c\u2068d\u2069e", ["\u2066".encode(), "\u2069".encode()]),
    ("line-separator", "one\u2028two\u2029three", ["\u2028".encode(), "\u2029".encode()]),
    ("zero-width", "pay\u200b\u200d\ufeffpal", ["\u200b".encode(), "\ufeff".encode()]),
    ("newline", "title\nrevision: sha256:" + "0" * 64, [b"title\r\nrevision"]),
    ("huge", "A" * 10_000, [b"A" * 500]),
]


@pytest.mark.parametrize(("name", "title", "raw"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_forge_strings_render_inert(
    desk: Desk, name: str, title: str, raw: list[bytes]
) -> None:
    desk.forge.state.add_issue(REPO, 5, title, login=f"user{title[:40]}")
    out = desk.tmp / "out" / "op.json"
    screen = Screen(desk.run_args(out), desk.env())
    screen.expect(REV_PROMPT)
    shown = screen.text
    screen.child.send("\x04")
    assert screen.finish() == 2
    for needle in raw:
        assert needle not in shown, name
    assert b"\x1b" not in shown and "\x9b".encode() not in shown
    title_line = shown.split(b"title (untrusted: data from the forge, not instructions):")[1]
    first = title_line.split(b"\r\n")[1]
    assert first.startswith(b"    ")
    assert len(first) < 600  # capped
    if name == "huge":
        assert b"more)" in first


@pytest.mark.parametrize("at", ["revision", "passphrase"])
def test_a_hang_up_at_a_prompt_is_interrupted_and_spends_nothing(desk: Desk, at: str) -> None:
    """SIGHUP at a prompt used to end the process by the signal, the receipt left
    ``reserved`` (what a crash after a spent grant looks like). Now it is ``interrupted``,
    exit 130, no grant, nothing run — for a SIGHUP sent to the process and for a real
    hang-up (the terminal's master side closed: end of input, then the kernel's SIGHUP).
    Twin: SIGINT at the same prompt stays the operator's answer — refused
    ``prompt-cancelled``, exit 2."""
    desk.forge.state.add_issue(REPO, 3, "Something")
    for how, code in (("SIGHUP", 130), ("closed", 130), ("SIGINT", 2)):
        out = desk.tmp / "out" / f"{how}.json"
        screen = Screen(desk.run_args(out), desk.env())
        screen.expect(REV_PROMPT)
        if at == "passphrase":
            screen.child.sendline(screen.revision())
            screen.expect(PASS_PROMPT)
        if how == "closed":
            assert screen.hang_up() == code
        else:
            os.kill(screen.child.pid, getattr(signal, how))
            assert screen.finish() == code, screen.text[-800:]
        doc = receipt(out)
        assert doc["exit_code"] == code and doc["grant"] is None, (how, doc)
        if code == 130:
            assert doc["status"] == "interrupted" and doc["refusal"] is None
        else:
            stage = "confirm" if at == "revision" else "unlock"
            assert doc["refusal"] == {"stage": stage, "code": "prompt-cancelled"}
        if how == "SIGHUP":
            assert b"factory: interrupted: the terminal hung up" in screen.text
        assert desk.fakes.records("run") == [] and not list(desk.ledger.iterdir())
        assert git(desk.wt, "status", "--porcelain") == ""


def test_ctrl_c_during_the_authorized_run_is_interrupted(desk: Desk) -> None:
    desk.fakes.mode(claude="retry-storm", codex="ok")  # the worker never finishes by itself
    desk.forge.state.add_issue(REPO, 3, "Something")
    out = desk.tmp / "out" / "op.json"
    screen = Screen(desk.run_args(out), desk.env())
    screen.expect(REV_PROMPT)
    screen.child.sendline(screen.revision())
    screen.expect(PASS_PROMPT)
    screen.child.sendline(PASSPHRASE)
    screen.expect("Authorized.")
    desk.fakes.wait_records("run", 1, timeout=30)
    screen.child.send("\x03")
    assert screen.finish() == 130
    doc = receipt(out)
    assert doc["status"] == "interrupted" and doc["exit_code"] == 130
    assert doc["grant"] is not None  # the grant was spent: the receipt says so
    assert doc["agent_run"]["status"] == "interrupted"  # type: ignore[index]
    assert TOKEN.encode() not in screen.text
    assert desk.fakes.survivors() == []


def _creating(args: list[str], *flags: str) -> list[str]:
    """``run_args`` with ``--worktree W`` replaced by the creating form's flags."""
    at = args.index("--worktree")
    return [*args[:at], *flags, *args[at + 2 :]]


def test_run_with_repo_creates_the_shown_worktree_after_the_grant(desk: Desk) -> None:
    desk.forge.state.add_issue(REPO, 12, "Fix the widget")
    out, made = desk.tmp / "out" / "run.json", Path(os.path.realpath(desk.tmp)) / "made"
    head = git(desk.repo, "rev-parse", "HEAD").strip()
    flags = ("--repo", str(desk.repo), "--worktree-dir", str(made))
    args = desk.run_args(out)
    args[args.index("--timeout-ms") + 1] = "240000"  # generous on a loaded machine
    screen = Screen(_creating(args, *flags), desk.env())
    screen.expect(REV_PROMPT)
    assert not made.exists()  # shown on the screen, created only once the grant is spent
    screen.child.sendline(screen.revision())
    screen.expect(PASS_PROMPT)
    screen.child.sendline(PASSPHRASE)
    screen.child.timeout = 900  # the whole agent cycle runs now
    assert screen.finish() == 0, screen.text.decode(errors="replace")
    assert b"worktree (factory creates it): " + str(made).encode() in screen.text
    assert f"base commit: {head}".encode() in screen.text
    assert receipt(out)["status"] == "executed"
    agent = receipt(out.with_name("run.json.agent.json"))
    assert agent["status"] == "completed"
    assert agent["base"]["isolation"] == "factory-created-linked-git-worktree"  # type: ignore[index]
    creation = agent["worktree_creation"]
    assert creation["base_commit"] == head and creation["path"] == str(made)  # type: ignore[index]
    assert str(creation["branch"]).startswith("factory/run-")  # type: ignore[index]
    common = git(made, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    assert os.path.realpath(common) == os.path.realpath(desk.repo / ".git")
    verified = run_factory(["operator", "verify", str(out), "--public-key", str(desk.public)])
    assert verified.returncode == 0, verified.stdout


@pytest.mark.parametrize(
    ("flags", "code"),
    [
        (["--worktree-dir", "{tmp}/taken"], "worktree-dir-exists"),
        (["--base", "no-such-rev"], "base-missing"),
        (["--branch", "main"], "worktree-branch-exists"),
        (["--worktree", "{tmp}/wt"], "worktree-or-repo"),
    ],
)
def test_run_with_repo_refusals_exit_2_before_anything(
    desk: Desk, flags: list[str], code: str
) -> None:
    # Twin: test_run_with_repo_creates_the_shown_worktree_after_the_grant.
    (desk.tmp / "taken").mkdir()
    desk.forge.state.add_issue(REPO, 12, "Fix the widget")
    out = desk.tmp / "out" / "run.json"
    extra = [f.format(tmp=desk.tmp) for f in flags]
    args = _creating(desk.run_args(out), "--repo", str(desk.repo), *extra)
    before = git(desk.repo, "worktree", "list", "--porcelain")
    proc = run_factory(args, env=desk.env())
    assert proc.returncode == 2 and code.encode() in proc.stderr, proc.stderr
    assert not out.exists() and desk.forge.state.requests == []
    assert git(desk.repo, "worktree", "list", "--porcelain") == before


def test_a_branch_taken_while_the_operator_reads_is_refused_at_the_grant(desk: Desk) -> None:
    desk.forge.state.add_issue(REPO, 12, "Fix the widget")
    out, made = desk.tmp / "out" / "run.json", desk.tmp / "made"
    flags = ("--repo", str(desk.repo), "--worktree-dir", str(made), "--branch", "op/fix")
    screen = Screen(_creating(desk.run_args(out), *flags), desk.env())
    screen.expect(REV_PROMPT)
    git(desk.repo, "branch", "op/fix")
    screen.child.sendline(screen.revision())
    screen.expect(PASS_PROMPT)
    screen.child.sendline(PASSPHRASE)
    assert screen.finish() == 2
    doc = receipt(out)
    assert doc["refusal"] == {"stage": "grant", "code": "worktree-branch-exists"}
    assert not made.exists() and desk.fakes.records("run") == []
    assert not list(desk.ledger.iterdir())  # the grant was never spent
