"""The rehearsal scenario: what the scripted loopback model answers, per invocation (SPEC P-5).

Schema ``factory.rehearsal-scenario/1`` (documented in ``design/rehearsal.md``)::

    {
      "schema": "factory.rehearsal-scenario/1",
      "description": "free text",
      "invocations": [
        {"role": "worker",
         "tool_calls": [{"tool": "Write", "file_path": "notes.txt", "content": "hi\\n"}],
         "final_message": "Wrote notes.txt."},
        {"role": "reviewer",
         "tool_calls": [{"tool": "shell", "command": "cat notes.txt"}],
         "final_message": "{\\"verdict\\":\\"APPROVE\\",\\"summary\\":\\"fine\\"}"}
      ]
    }

An MCP tool call, for either role, is ``{"tool": "mcp", "server": "factory", "name":
"register", "arguments": {...}}`` (served as the tool ``mcp__factory__register``).

Each invocation is one run of a provider CLI. Its turns are served one per model request:
turn ``k < len(tool_calls)`` returns ``tool_calls[k]`` as the only tool call, the last turn
returns ``final_message`` as plain text and ends the conversation. Claude tools (worker and
repair) are ``Write``, ``Edit``, ``Read`` and ``Bash``; the Codex reviewer has ``shell``
(served as Codex's ``exec_command`` function call). Relative paths are passed to the CLI as
written; the CLI resolves them against its working directory.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from factory.errors import UsageError
from factory.models import StrictModel, describe_validation_error
from factory.provider_api import Role

SCENARIO_SCHEMA = "factory.rehearsal-scenario/1"
MAX_SCENARIO_BYTES = 1 << 20
"""Scenario files are small, hand-written scripts; anything larger is refused (bytes)."""


class ScenarioInvalid(UsageError):
    """The scenario file is missing, unreadable, too large or fails the schema (exit 2)."""


SCENARIO_INVALID = ScenarioInvalid.define(
    "rehearsal-scenario-invalid",
    "pass an existing scenario file of at most 1 MiB that follows design/rehearsal.md",
    default=True,
)


class ClaudeWrite(StrictModel):
    """Claude Code's ``Write`` tool: create or overwrite ``file_path`` with ``content``."""

    tool: Literal["Write"]
    file_path: str = Field(min_length=1)
    content: str

    def tool_input(self) -> dict[str, object]:
        return {"file_path": self.file_path, "content": self.content}

    def wire_name(self) -> str:
        return self.tool


class ClaudeEdit(StrictModel):
    """Claude Code's ``Edit`` tool: replace ``old_string`` by ``new_string`` in ``file_path``."""

    tool: Literal["Edit"]
    file_path: str = Field(min_length=1)
    old_string: str = Field(min_length=1)
    new_string: str
    replace_all: bool = False

    def tool_input(self) -> dict[str, object]:
        return {
            "file_path": self.file_path,
            "old_string": self.old_string,
            "new_string": self.new_string,
            "replace_all": self.replace_all,
        }

    def wire_name(self) -> str:
        return self.tool


class ClaudeRead(StrictModel):
    """Claude Code's ``Read`` tool (Claude refuses an ``Edit`` of a file it has not read)."""

    tool: Literal["Read"]
    file_path: str = Field(min_length=1)

    def tool_input(self) -> dict[str, object]:
        return {"file_path": self.file_path}

    def wire_name(self) -> str:
        return self.tool


class ClaudeBash(StrictModel):
    """Claude Code's ``Bash`` tool; the profile's permission rules decide whether it runs."""

    tool: Literal["Bash"]
    command: str = Field(min_length=1)
    description: str = "scripted rehearsal command"

    def tool_input(self) -> dict[str, object]:
        return {"command": self.command, "description": self.description}

    def wire_name(self) -> str:
        return self.tool


class McpCall(StrictModel):
    """A call of a tool an MCP server gives the CLI (``claude --mcp-config``, Codex's
    ``mcp_servers``): ``server`` is the name the CLI's configuration gives the server,
    ``name`` the tool, ``arguments`` its input. Both CLIs name such a tool
    ``mcp__<server>__<name>`` (observed with the pinned versions)."""

    tool: Literal["mcp"]
    server: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    arguments: dict[str, Any] = Field(default_factory=dict)

    def tool_input(self) -> dict[str, object]:
        return dict(self.arguments)

    def wire_name(self) -> str:
        return f"mcp__{self.server}__{self.name}"


class CodexShell(StrictModel):
    """A Codex shell command (``exec_command``), run inside Codex's own sandbox."""

    tool: Literal["shell"]
    command: str = Field(min_length=1)

    def tool_input(self) -> dict[str, object]:
        return {"cmd": self.command}

    def wire_name(self) -> str:
        return CODEX_SHELL_FUNCTION


ClaudeToolCall = Annotated[
    ClaudeWrite | ClaudeEdit | ClaudeRead | ClaudeBash | McpCall, Field(discriminator="tool")
]
ToolCall = Annotated[
    ClaudeWrite | ClaudeEdit | ClaudeRead | ClaudeBash | CodexShell | McpCall,
    Field(discriminator="tool"),
]
#: The function name Codex gives its shell tool on the Responses wire.
CODEX_SHELL_FUNCTION = "exec_command"

CLAUDE_ROLES: frozenset[Role] = frozenset({"worker", "repair"})
CODEX_ROLES: frozenset[Role] = frozenset({"reviewer"})


class Invocation(StrictModel):
    """One provider CLI run: its tool calls in order, then its final message."""

    role: Role
    tool_calls: tuple[ToolCall, ...] = ()
    final_message: str = Field(min_length=1)

    @model_validator(mode="after")
    def _tools_fit_role(self) -> Invocation:
        for call in self.tool_calls:
            if isinstance(call, McpCall):
                continue  # an MCP server's tools are the same to both CLIs
            is_codex = isinstance(call, CodexShell)
            if is_codex != (self.role in CODEX_ROLES):
                raise ValueError(
                    f"tool {call.tool!r} is not available to role {self.role!r} "
                    "(worker/repair: Write, Edit, Read, Bash; reviewer: shell; both: mcp)"
                )
        return self

    @property
    def turns(self) -> int:
        """Model responses this invocation needs: one per tool call plus the final one."""
        return len(self.tool_calls) + 1


class Scenario(StrictModel):
    """A whole rehearsal script (``factory.rehearsal-scenario/1``)."""

    schema_id: Literal["factory.rehearsal-scenario/1"] = Field(alias="schema")
    description: str = ""
    invocations: tuple[Invocation, ...] = Field(min_length=1)

    def queue(self, roles: frozenset[Role]) -> tuple[int, ...]:
        """Indexes into :attr:`invocations` whose role is in ``roles``, in order."""
        return tuple(i for i, inv in enumerate(self.invocations) if inv.role in roles)


def parse_scenario(data: bytes) -> Scenario:
    """Parse scenario bytes (UTF-8 JSON).

    Raises:
        ScenarioInvalid: too large, not JSON, or not ``factory.rehearsal-scenario/1``.
    """
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioInvalid(
            f"scenario is {len(data)} bytes, over the {MAX_SCENARIO_BYTES}-byte limit"
        )
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioInvalid(f"scenario is not UTF-8 JSON ({exc})") from exc
    except RecursionError:
        raise ScenarioInvalid("scenario is nested too deeply to be a scenario") from None
    # JSON-mode validation: strict types, but JSON arrays may fill tuple fields.
    try:
        return Scenario.model_validate_json(data)
    except ValidationError as exc:
        raise ScenarioInvalid(
            f"rehearsal scenario is invalid: {describe_validation_error(exc)}"
        ) from exc


def load_scenario(path: Path) -> Scenario:
    """Read and parse the scenario at ``path``.

    Raises:
        ScenarioInvalid: unreadable, not a regular file, or as :func:`parse_scenario`.
    """
    try:
        # Non-blocking, then refused unless regular: a FIFO would wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        hint = " (the scenario factory ships is --rehearsal demo)" if exc.errno == 2 else ""
        raise ScenarioInvalid(f"cannot read scenario {path}: {exc.strerror}{hint}") from exc
    # Judged on the descriptor before wrapping it: os.fdopen itself refuses a directory
    # with IsADirectoryError, which would reach the user as an internal error.
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ScenarioInvalid(f"scenario {path} is not a regular file (a folder, FIFO, device …)")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_SCENARIO_BYTES + 1)
        except OSError as exc:
            raise ScenarioInvalid(f"cannot read scenario {path}: {exc.strerror}") from exc
    return parse_scenario(data)


#: Scenarios shipped in the package, by name (``--rehearsal demo``).
BUILTIN_SCENARIOS = ("demo",)


BUILTIN_DIR = Path(__file__).with_name("scenarios")


def scenario_path(value: str) -> Path:
    """The scenario file ``--rehearsal VALUE`` names: a path that exists is that path (a
    file of yours named ``demo`` wins); otherwise a built-in name is the packaged scenario;
    anything else is returned as given, for :func:`load_scenario` to refuse by name."""
    path = Path(value)
    if value in BUILTIN_SCENARIOS and not os.path.lexists(path):
        return BUILTIN_DIR / f"{value}.json"
    return path
