"""The arguments each built-in acquisition provider takes, checked when a scenario loads.

A string argument may contain ``${name}`` placeholders for declared run parameters
(:func:`expand` fills them in when the run acquires). Unknown providers, unknown or
missing arguments and undeclared placeholders are load errors.

``command`` takes its argv either as ``argv`` (a list written in the scenario) or as
``argv_json`` (one string, typically ``"${test_argv}"``, holding a JSON array of strings
once expanded): a run parameter is one string, and a user's test command is a list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from factory.gate.errors import SCENARIO_INVALID

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")
GATES = ("pre-commit", "pre-push", "pre-pr", "release")

# provider -> (required, optional) argument names
PROVIDERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "agent-receipt": (frozenset({"receipt"}), frozenset({"select"})),
    "candidate-risk": (frozenset({"receipt"}), frozenset({"select"})),
    "command": (frozenset({"cwd"}), frozenset({"argv", "argv_json", "timeout_s", "select", "env"})),
    "file": (frozenset({"path"}), frozenset({"pointer", "max_bytes", "select"})),
    "git": (frozenset({"repo", "ref"}), frozenset({"ancestor_of", "select"})),
    "review-gate": (frozenset({"gate", "repo"}), frozenset({"select"})),
}


def check_binding(
    provider: str, args: Mapping[str, Any], params: tuple[str, ...], where: str
) -> None:
    """Raise :data:`SCENARIO_INVALID` unless ``args`` are what ``provider`` takes."""
    if provider not in PROVIDERS:
        raise SCENARIO_INVALID(f"{where}.provider: one of {', '.join(PROVIDERS)}")
    required, optional = PROVIDERS[provider]
    missing = sorted(required - set(args))
    stray = sorted(set(args) - required - optional)
    if missing or stray:
        what = f"lacks {missing[0]!r}" if missing else f"has unknown argument {stray[0]!r}"
        raise SCENARIO_INVALID(f"{where}: provider {provider} {what}")
    for name, value in args.items():
        _check_value(name, value, params, f"{where}.{name}")
    if provider == "review-gate" and args["gate"] not in GATES:
        raise SCENARIO_INVALID(f"{where}.gate: one of {', '.join(GATES)}")
    if "timeout_s" in args and not (
        type(args["timeout_s"]) is int and 0 < args["timeout_s"] <= 86_400
    ):
        raise SCENARIO_INVALID(f"{where}.timeout_s: an integer from 1 to 86400")
    if "max_bytes" in args and not (
        type(args["max_bytes"]) is int and 0 < args["max_bytes"] <= 1 << 26
    ):
        raise SCENARIO_INVALID(f"{where}.max_bytes: an integer from 1 to {1 << 26}")
    for pointer in ("pointer", "select"):
        if pointer in args and not _is_pointer(args[pointer]):
            raise SCENARIO_INVALID(f"{where}.{pointer}: a JSON pointer ('' or /a/b)")
    if provider == "command" and ("argv" in args) == ("argv_json" in args):
        raise SCENARIO_INVALID(f"{where}: provider command takes exactly one of argv or argv_json")
    if provider == "command" and "argv" in args and not args["argv"]:
        raise SCENARIO_INVALID(f"{where}.argv: a non-empty list of strings")


def _check_value(name: str, value: Any, params: tuple[str, ...], where: str) -> None:
    if name in ("timeout_s", "max_bytes"):
        return
    items = value if name in ("argv", "env") else [value]
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise SCENARIO_INVALID(
            f"{where}: {'a list of strings' if name in ('argv', 'env') else 'a string'}"
        )
    for item in items:
        for placeholder in PLACEHOLDER.findall(item):
            if placeholder not in params:
                raise SCENARIO_INVALID(f"{where}: ${{{placeholder}}} is not a declared param")


def _is_pointer(value: Any) -> bool:
    return isinstance(value, str) and (value == "" or value.startswith("/"))


def expand(value: str, params: Mapping[str, str]) -> str:
    """Fill ``${name}`` placeholders from the run's parameters."""
    return PLACEHOLDER.sub(lambda m: params[m.group(1)], value)


def select(document: Any, pointer: str) -> tuple[bool, Any]:
    """RFC 6901 JSON pointer lookup: ``(True, value)`` or ``(False, None)`` when absent."""
    if pointer == "":
        return True, document
    current = document
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and (part == "0" or part[0] != "0"):
            index = int(part)
            if index >= len(current):
                return False, None
            current = current[index]
        else:
            return False, None
    return True, current
