"""``factory review validate`` as a process (issue 13): exactly the seven fields of
``factory.review-gate-result/1``, exit 0 allow / 3 denial / 2 usage / 4 failure, and the
decision gate's ``review-gate`` provider reading it with its default runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from factory.gate.providers import review_gate
from factory.review.lock import StoreLock
from tests.review.cli_helpers import review, store_root
from tests.review.gates_support import approve
from tests.support.git import git


def _approved(repo: Path, tmp: Path) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp)


def test_allow_and_denial_exit_codes_and_exact_fields(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    ok = review(
        "validate", "--gate", "pre-commit", "--json", "--cwd", str(repo / "docs"), cwd=tmp_path
    )
    assert ok.code == 0, ok.stderr
    assert list(ok.doc) == ["schema", "result", "allowed", "action", "reason", "denial", "context"]
    assert ok.doc["result"] == "allow" and ok.doc["denial"] is None
    assert "ALLOW at pre-commit" in ok.stderr
    (repo / "docs" / "guide.md").write_text("# guide\n\nedited\n")
    no = review("validate", "--gate", "pre-commit", "--json", "--cwd", str(repo), cwd=repo)
    assert no.code == 3 and no.doc["allowed"] is False
    assert no.doc["denial"] == {"stage": "receipt-discovery", "code": "scope-changed"}
    assert no.doc["context"]["next"][0] in no.stderr


def test_usage_is_exit_2_and_a_typed_failure_is_exit_4(repo: Path, tmp_path: Path) -> None:
    usage = review("validate", "--gate", "pre-commit", "--base-ref", "main", cwd=repo)
    assert usage.code == 2 and "review-gate-usage" in usage.stderr and usage.stdout == b""
    bad_gate = review("validate", "--gate", "post-apply", cwd=repo)
    assert bad_gate.code == 2
    not_repo = review("validate", "--gate", "pre-commit", "--cwd", str(tmp_path), cwd=tmp_path)
    assert not_repo.code == 2
    _approved(repo, tmp_path)
    with StoreLock(store_root(repo) / "LOCK", command="test holds the store"):
        busy = review("validate", "--gate", "pre-commit", cwd=repo)
    assert busy.code == 4 and "review-store-busy" in busy.stderr and busy.stdout == b""


# The gate runs on every commit: the CLI must not pay for what it never uses. trio (the
# provider supervisor's) costs ~130 ms of CPU to import on this machine's class of CPU.
_PROBE = """
import sys
from factory.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"trio", "httpx", "rich", "jinja2"})
sys.stderr.write("heavy-modules=" + ",".join(heavy) + "\\n")
other = sorted(m for m in sys.modules if m.startswith("factory.cli.") and m.endswith("_cmd"))
sys.stderr.write("command-modules=" + ",".join(other) + "\\n")
sys.exit(code)
"""


def test_the_gate_cli_loads_no_provider_machinery(repo: Path, tmp_path: Path) -> None:
    _approved(repo, tmp_path)
    for gate in ("pre-commit", "pre-push"):
        if gate == "pre-push":
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "--no-verify", "-m", "the approved candidate")
        argv = [sys.executable, "-c", _PROBE, "review", "validate", "--gate", gate]
        out = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        assert "heavy-modules=\n" in out.stderr, out.stderr
        # only review's own command modules: not the other commands nor their schemas
        mods = "command-modules=factory.cli.review_cmd,factory.cli.review_gates_cmd\n"
        assert mods in out.stderr, out.stderr


def test_help_answers() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "factory", "review", "validate", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0 and "pre-commit" in out.stdout and "Exit 0 allow" in out.stdout


async def test_the_decision_gates_provider_reads_the_real_command(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    acquire = review_gate.make()  # the default runner: python -m factory review validate
    seen = await acquire({"gate": "pre-commit", "repo": str(repo)})
    assert seen.failure is None and seen.document["allowed"] is True
    (repo / "docs" / "guide.md").write_text("# guide\n\nedited\n")
    denied = await acquire({"gate": "pre-commit", "repo": str(repo)})
    assert denied.failure is None and denied.document["result"] == "scope-changed"
