"""Every refusal names a command that makes progress (issue 23 §1).

A table over every review command that reads the store × {one corrupt record, two invalid
records of one class, a folder without its record, a receipt that is not its record's
derivation}: the real CLI's answer has a non-empty ``next``, and following the
first ``next`` (placeholders filled the way a maintainer would: TEXT, NAME, and FILE with
the ``expected_authorization`` the last refusal printed) empties the store of anomalies
within a bounded number of steps, never running the same command with the same input on
the same store twice (no cycle). The twin: on a healthy store the same commands answer as
before (no ceremony named, the gate allows).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from factory.review.errors import ReviewRefused
from factory.review.exits import exits_for
from factory.review.gate_errors import AuthorizationRefused
from factory.review.receipt import RECEIPT_FILE
from factory.review.repair import repair
from factory.review.service import open_context
from factory.review.store import STATE_FILE
from tests.review.cli_helpers import BASE_FILES, Ran, review, snapshot_bytes, store_root
from tests.review.gates_support import approve, begin
from tests.review.mirror_support import with_remote
from tests.support.git import init_repo

STEPS = 10
ZERO = "sha256:" + "0" * 64


def _invalid(repo: Path, text: str, data: bytes | None = None) -> str:
    """A lineage of another candidate whose record today's validator refuses."""
    saved = (repo / "README.md").read_text()
    (repo / "README.md").write_text(text)
    lid = str(begin(repo)["lineage"])
    (repo / "README.md").write_text(saved)
    path = store_root(repo) / lid / STATE_FILE
    if data is None:
        doc = json.loads(path.read_bytes())
        doc["state"]["retired_field"] = True
        data = json.dumps(doc).encode()
    path.write_bytes(data)
    return lid


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with a bare origin and one approved lineage (copied per test)."""
    tmp = tmp_path_factory.mktemp("healthy")
    repo = init_repo(tmp / "repo", dict(BASE_FILES))
    with_remote(repo, tmp)
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    (tmp / "inputs").mkdir()
    approve(repo, tmp / "inputs")
    return tmp


def _copy(healthy: Path, dest: Path) -> Path:
    shutil.copytree(healthy, dest, symlinks=True)
    return dest / "repo"


def _store_key(repo: Path) -> str:
    files = snapshot_bytes(repo)
    h = hashlib.sha256()
    for name in sorted(files):
        if not name.endswith("memo.json"):
            h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return h.hexdigest()


def _next_of(ran: Ran) -> list[str]:
    if ran.doc is None:  # show: a readable rendering, its next commands one per line
        lines = ran.stdout.decode().splitlines()
        return [x.removeprefix("next: ").strip() for x in lines if x.startswith("next: ")]
    if "context" in ran.doc:  # a gate result
        return list(ran.doc["context"]["next"])
    return list(ran.doc["next"])


def _fill(template: str, auth: Path) -> list[str]:
    argv = shlex.split(template)
    assert argv[:2] == ["factory", "review"], f"{template!r} is not a review command"
    fills = {"TEXT": "walked by the table", "NAME": "maintainer", "FILE": str(auth)}
    argv = [fills.get(a, a) for a in argv[2:]]
    return argv + (["--json"] if argv[0] == "validate" else [])


def _anomalies(repo: Path) -> tuple[str, ...]:
    return exits_for(open_context(repo).store)


def _walk(repo: Path, argv: list[str], auth: Path) -> list[tuple[str, int]]:
    """Follow the first ``next`` from ``argv`` until the store has no anomaly."""
    auth.write_bytes(b"")
    seen: set[tuple[str, ...]] = set()
    trail: list[tuple[str, int]] = []
    for _ in range(STEPS):
        key = (*argv, auth.read_text(), _store_key(repo))
        assert key not in seen, f"cycle back to {argv}: {trail}"
        seen.add(key)
        ran = review(*argv, cwd=repo)
        trail.append((" ".join(argv), ran.code))
        assert ran.code != 1, ran.stderr
        nxt = _next_of(ran)
        assert nxt, f"{argv} answered no next: {ran.stdout[:400]!r}"
        if not _anomalies(repo):
            return trail
        expected = ran.doc.get("expected_authorization") if isinstance(ran.doc, dict) else None
        if expected is not None:
            auth.write_text(expected)
        argv = _fill(nxt[0], auth)
    raise AssertionError(f"no progress within {STEPS} steps: {trail}")


def _commands(bad: str) -> dict[str, list[str]]:
    lineage = ["--lineage", bad]
    who = ["--reason", "r", "--actor", "a"]
    return {
        "start": ["start"],
        "lens": ["lens", "--lens", "reliability", *lineage],
        "finalize": ["finalize", *lineage, "--failed"],
        "status": ["status"],
        "show": ["show", *lineage],
        "show-default": ["show"],  # no --lineage: the record in the way, with its ceremony
        "validate": ["validate", "--gate", "pre-commit", "--json"],
        "validate-lineage": ["validate", "--gate", "pre-push", "--json", *lineage],
        "push": ["push"],
        "fetch": ["fetch"],
        "invalidate": ["invalidate", *lineage, "--expected-revision", ZERO, "--reason", "r"],
        "recover": [
            "recover",
            "--predecessor-lineage",
            bad,
            "--expected-predecessor-revision",
            ZERO,
            "--disposition",
            "invalidated",
            *who,
        ],
        "reclaim": ["reclaim", *lineage, *who],
        "repair": ["repair", *lineage, "--class", "invalid-record", *who],
    }


COMMANDS = list(_commands("x"))


def _scenario(repo: Path, kind: str) -> str:
    if kind == "corrupt":
        return _invalid(repo, "first\n", b'{"revision": "not json at all')
    if kind == "incomplete":  # a folder without its record: reclaim, no authorization
        lid = _invalid(repo, "first\n")
        (store_root(repo) / lid / STATE_FILE).unlink()
        return lid
    if kind == "bad-receipt":  # the approved lineage's receipt is not its derivation
        (lid,) = [p.name for p in store_root(repo).iterdir() if p.name.startswith("review-")]
        (store_root(repo) / lid / RECEIPT_FILE).write_bytes(b"{}\n")
        return lid
    first = _invalid(repo, "first\n")
    _invalid(repo, "second\n")
    return first


@pytest.mark.parametrize("kind", ["corrupt", "two-invalid", "incomplete", "bad-receipt"])
@pytest.mark.parametrize("command", COMMANDS)
def test_following_next_from_any_command_clears_the_store_without_a_cycle(
    healthy: Path, tmp_path: Path, kind: str, command: str
) -> None:
    repo = _copy(healthy, tmp_path / "copy")
    bad = _scenario(repo, kind)
    trail = _walk(repo, _commands(bad)[command], tmp_path / "auth.txt")
    assert any(cmd.startswith(("repair", "reclaim")) for cmd, _ in trail), trail


def test_two_invalid_records_are_named_each_with_the_other(healthy: Path, tmp_path: Path) -> None:
    repo = _copy(healthy, tmp_path / "copy")
    first = _invalid(repo, "first\n")
    second = _invalid(repo, "second\n")
    ran = review("repair", "--lineage", first, "--class", "invalid-record", "--reason", "r",
                 "--actor", "a", cwd=repo)  # fmt: skip
    assert ran.code == 2 and ran.doc["error"]["code"] == "review-ceremony-not-unique"
    tail = "--reason TEXT --actor NAME --maintainer-authorization FILE"
    assert ran.doc["next"] == [
        f"factory review repair --lineage {a} --class invalid-record --also-invalid {b} {tail}"
        for a, b in sorted([(first, second), (second, first)])
    ]
    status = review("status", cwd=repo).doc
    assert status["next"] == ran.doc["next"]


def _healthy_answers(repo: Path) -> dict[str, Any]:
    status = review("status", cwd=repo).doc
    return {
        "status_next": status["next"],
        "entry_next": status["lineages"][0]["next"][:1],
        "gate": review("validate", "--gate", "pre-commit", "--json", cwd=repo).doc["allowed"],
        "show_ceremony": "repair" in review("show", cwd=repo).stdout.decode(),
    }


def test_twin_a_healthy_store_names_no_ceremony(healthy: Path, tmp_path: Path) -> None:
    repo = _copy(healthy, tmp_path / "copy")
    assert _anomalies(repo) == ()
    assert _healthy_answers(repo) == {
        "status_next": ["factory review validate --gate pre-commit"],  # never empty
        "entry_next": ["factory review validate --gate pre-commit"],
        "gate": True,
        "show_ceremony": False,
    }


def test_schema_and_install_hooks_never_read_a_record(healthy: Path, tmp_path: Path) -> None:
    """The two commands outside the table answer a corrupt store as they answer a healthy
    one: they never read a record, so no record can wedge them."""
    answers = []
    for name, corrupt in (("healthy", False), ("corrupt", True)):
        repo = _copy(healthy, tmp_path / name)
        if corrupt:
            _scenario(repo, "corrupt")
        hooks = review("install-hooks", cwd=repo)
        schema = review("schema", "reviewer", cwd=repo)
        answers.append((hooks.code, hooks.doc["next"], schema.code, schema.doc))
    assert answers[0] == answers[1] and answers[0][1]


def test_twin_a_ceremony_on_a_valid_lineage_is_still_refused(healthy: Path, tmp_path: Path) -> None:
    repo = _copy(healthy, tmp_path / "copy")
    lid = review("status", cwd=repo).doc["lineages"][0]["lineage"]
    before = snapshot_bytes(repo)
    ran = review("repair", "--lineage", lid, "--class", "invalid-record", "--reason", "r",
                 "--actor", "a", cwd=repo)  # fmt: skip
    assert ran.code == 2 and ran.doc["error"]["code"] == "review-ceremony-wrong-class"
    assert ran.doc["next"] == ["factory review status"]
    assert snapshot_bytes(repo) == before


def test_also_invalid_must_name_exactly_the_other_members(healthy: Path, tmp_path: Path) -> None:
    repo = _copy(healthy, tmp_path / "copy")
    first = _invalid(repo, "first\n")
    second = _invalid(repo, "second\n")
    before = snapshot_bytes(repo)
    for also in ((), (first,), (second, "review-0000000000000000")):
        with pytest.raises(ReviewRefused) as exc:
            repair(repo, first, "invalid-record", "r", "a", None, also)
        assert exc.value.code == "review-ceremony-not-unique"
    assert snapshot_bytes(repo) == before
    with pytest.raises(AuthorizationRefused) as named:  # the right names reach the binding
        repair(repo, first, "invalid-record", "r", "a", None, (second,))
    assert f"predecessor_lineage={first}\n" in named.value.expected
