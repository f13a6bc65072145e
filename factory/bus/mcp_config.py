"""``factory bus mcp-config``: a ready MCP client configuration for the bus (issue 9 §5).

An MCP client starts the server itself, in whatever folder the client was started in, so a
relative ``--data-dir`` in a hand-written configuration silently gives sessions started in
different folders different buses. The configuration printed here names the factory
executable and the data dir by absolute path:

* Claude Code: the ``.mcp.json`` document (``{"mcpServers": {"factory": {…}}}``), which
  ``claude --mcp-config FILE`` also reads; with ``entry`` only the server's own object, for
  ``claude mcp add-json factory '<object>'``;
* Codex: the ``[mcp_servers.factory]`` table for ``~/.codex/config.toml``.

Pure: the words that start factory come from :func:`factory.usercmd.factory_program`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final, Literal

from factory.usercmd import factory_program

SERVER_KEY: Final = "factory"
Client = Literal["claude", "codex"]


def server_command(data_dir: Path, program: list[str] | None = None) -> tuple[str, list[str]]:
    """The absolute command and its arguments that serve the bus for ``data_dir``."""
    command, *lead = program if program is not None else factory_program()
    args = [*lead, "bus", "serve", "--data-dir", os.path.abspath(data_dir)]
    return os.path.abspath(command), args


def claude_entry(data_dir: Path, program: list[str] | None = None) -> dict[str, Any]:
    """The server object Claude Code expects under ``mcpServers``."""
    command, args = server_command(data_dir, program)
    return {"type": "stdio", "command": command, "args": args, "env": {}}


def _toml_string(text: str) -> str:
    # A JSON string literal (ASCII, control characters as \\uXXXX) is a TOML basic string.
    return json.dumps(text)


def codex_table(data_dir: Path, program: list[str] | None = None) -> str:
    """The ``[mcp_servers.factory]`` table for Codex's ``config.toml``."""
    command, args = server_command(data_dir, program)
    items = ", ".join(_toml_string(a) for a in args)
    return f"[mcp_servers.{SERVER_KEY}]\ncommand = {_toml_string(command)}\nargs = [{items}]\n"


def render(
    client: Client, data_dir: Path, *, entry: bool = False, program: list[str] | None = None
) -> str:
    """The configuration text for ``client`` (ends with a newline)."""
    if client == "codex":
        return codex_table(data_dir, program)
    server = claude_entry(data_dir, program)
    value: dict[str, Any] = server if entry else {"mcpServers": {SERVER_KEY: server}}
    from factory.documents.emit import inert_json

    # Escaped like every document factory prints (issue 24 §3): a data dir holding a bidi
    # or invisible character parses to the same path but never reaches a terminal raw.
    return inert_json(json.dumps(value, indent=2, ensure_ascii=False)) + "\n"
