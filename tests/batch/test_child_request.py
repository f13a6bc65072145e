"""The typed hand-off to an attempt's child (issue 25): the child entry reads a request
document, never factory's CLI words; a request it cannot read is a typed refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.batch.child_request import (
    CHILD_MODULE,
    AgentChildRequest,
    child_argv,
    write_request,
)
from factory.cli.agent_child import main


def request(tmp_path: Path) -> AgentChildRequest:
    return AgentChildRequest(
        repo=str(tmp_path / "no-repo"), base="0" * 40, task="t", out=str(tmp_path / "r.json"),
        timeout_ms=10_000,
    )  # fmt: skip


def test_the_request_round_trips_and_the_argv_names_only_the_child(tmp_path: Path) -> None:
    path = write_request(tmp_path, request(tmp_path))
    assert AgentChildRequest.model_validate_json(path.read_bytes()) == request(tmp_path)
    argv = child_argv(path)
    assert argv[1:4] == ["-I", "-m", CHILD_MODULE] and argv[4:] == [str(path)]


@pytest.mark.parametrize("body", [b"{not json", b'{"schema": "factory.agent-child-request/1"}'])
def test_an_unreadable_request_is_refused_with_its_code(
    tmp_path: Path, body: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "agent-request.json"
    bad.write_bytes(body)
    assert main([str(bad)]) == 2
    assert "agent-request-invalid" in capsys.readouterr().err


def test_a_readable_request_reaches_the_agent_s_own_admission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The twin: a well-formed request is read and the attempt's own checks judge it (here:
    the repository does not exist), never the request reader; nothing on stdout."""
    path = write_request(tmp_path, request(tmp_path))
    code = main([str(path)])
    seen = capsys.readouterr()
    assert code != 0 and "agent-request-invalid" not in seen.err and seen.out == ""
    doc = json.loads(path.read_bytes())
    assert doc["schema"] == "factory.agent-child-request/1"
