"""Put the factory server into a client's configuration text, idempotently (issue 28).

Pure: text in, text out. The caller (:mod:`factory.bus.mcp_install`) reads and writes.

* Codex (TOML, ``[mcp_servers.factory]``): the text is checked with :mod:`tomllib` (the
  standard parser, which refuses a repeated table, the break ``>>`` twice made). A missing
  server is appended as its own table at the end, after a blank line; an existing one is
  edited in place with :mod:`tomlkit`, which keeps every comment, key order and format.
  Every other byte of the file is kept.
* Claude Code (JSON, ``mcpServers.factory``): parsed with :mod:`json` (a repeated key is
  refused), the other keys kept in their order, written back with a two-space indent as
  Claude Code writes it; the file's trailing newline, or its absence, is kept.

In both, the server's own keys are set (``command``, ``args``; for Claude Code ``type``
too, and ``env`` only when missing) and any other key in its entry (a timeout, an env) is
kept. Unchanged values give back the very same text, so a second run writes nothing.
"""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any

import tomlkit
from tomlkit.items import InlineTable

from factory.documents.canonical import unique_keys
from factory.errors import FactoryError, Refused

SERVER_KEY = "factory"

CLIENT_CONFIG_INVALID = Refused.define(
    "client-config-invalid",
    "the file was not changed: fix it (or move it aside) and run again",
)


def combined_entry(existing: Any, owned: dict[str, Any], defaults: dict[str, Any]) -> Any:
    """The server's entry after installing: ``existing`` with ``owned`` set and
    ``defaults`` added where missing."""
    entry = dict(existing) if isinstance(existing, dict) else {}
    entry.update(owned)
    for key, value in defaults.items():
        entry.setdefault(key, value)
    return entry


def _servers_of(doc: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    servers = doc.get(key, {})
    if not isinstance(servers, dict):
        raise CLIENT_CONFIG_INVALID(f"{where}: {key} is not a table of servers")
    entry = servers.get(SERVER_KEY)
    if entry is not None and not isinstance(entry, dict):
        raise CLIENT_CONFIG_INVALID(f"{where}: {key}.{SERVER_KEY} is not a server entry")
    return servers


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CLIENT_CONFIG_INVALID(f"{where} is not valid TOML ({exc})") from None


def _table_text(owned: dict[str, Any]) -> str:
    table = tomlkit.table()
    for key, value in owned.items():
        table[key] = value
    doc = tomlkit.document()
    doc.append("mcp_servers", tomlkit.table(is_super_table=True))
    doc["mcp_servers"].append(SERVER_KEY, table)
    return tomlkit.dumps(doc)


def _appended(text: str, owned: dict[str, Any]) -> str:
    if not text or text.endswith("\n\n"):
        lead = text
    else:  # a blank line before the table, a missing final newline supplied
        lead = text + ("\n" if text.endswith("\n") else "\n\n")
    return lead + _table_text(owned)


def _edited_in_place(text: str, owned: dict[str, Any]) -> str:
    doc = tomlkit.parse(text)
    servers = doc["mcp_servers"]
    if SERVER_KEY not in servers:  # only an inline mcp_servers gets here
        servers[SERVER_KEY] = tomlkit.inline_table()
    entry = servers[SERVER_KEY]
    for key, value in owned.items():
        entry[key] = value
    return tomlkit.dumps(doc)


def install_toml(text: str, owned: dict[str, Any], where: str) -> str:
    """``text`` (Codex's ``config.toml``) with ``[mcp_servers.factory]`` holding ``owned``.

    Raises:
        Refused: ``client-config-invalid``: not TOML, or its servers are not tables.
    """
    before = _parse_toml(text, where)
    servers = _servers_of(before, "mcp_servers", where)
    entry = combined_entry(servers.get(SERVER_KEY), owned, {})
    if entry == servers.get(SERVER_KEY):
        return text
    inline = isinstance(tomlkit.parse(text).get("mcp_servers"), InlineTable)
    if SERVER_KEY in servers or inline:
        after = _edited_in_place(text, owned)
    else:
        after = _appended(text, owned)
    expected = copy.deepcopy(before)
    expected.setdefault("mcp_servers", {})[SERVER_KEY] = entry
    if _parse_toml(after, where) != expected:  # the edit changed more than the server
        raise FactoryError(f"editing {where} would change more than the factory server")
    return after


def _parse_json(text: str, where: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        doc = json.loads(text, object_pairs_hook=unique_keys, parse_constant=_no_constant)
    except ValueError as exc:  # json.JSONDecodeError and DuplicateKey are ValueErrors
        raise CLIENT_CONFIG_INVALID(f"{where} is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise CLIENT_CONFIG_INVALID(f"{where} is not a JSON object")
    return doc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def install_json(text: str, owned: dict[str, Any], defaults: dict[str, Any], where: str) -> str:
    """``text`` (Claude Code's ``.claude.json``) with ``mcpServers.factory`` holding
    ``owned`` (and ``defaults`` where missing).

    Raises:
        Refused: ``client-config-invalid``: not a JSON object, a repeated key, or its
            servers are not objects.
    """
    doc = _parse_json(text, where)
    servers = _servers_of(doc, "mcpServers", where)
    entry = combined_entry(servers.get(SERVER_KEY), owned, defaults)
    if entry == servers.get(SERVER_KEY):
        return text
    doc["mcpServers"] = {**servers, SERVER_KEY: entry}
    ending = "\n" if text.endswith("\n") or not text.strip() else ""
    return json.dumps(doc, indent=2, ensure_ascii=False) + ending
