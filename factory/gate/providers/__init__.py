"""Built-in acquisition providers: ``agent-receipt``, ``command``, ``file``, ``git``,
``review-gate``. Each turns a condition's binding into one observation (a value, an
observed absence, or a typed failure) with its scope; :mod:`factory.gate.acquire` wraps it
into an evidence record. Anything else reaches a run as submitted evidence.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from factory.gate.evidence import Failure


@dataclass(frozen=True, slots=True)
class Observed:
    """What a provider saw. ``document`` is selected into by the binding's ``select``."""

    document: Any = None
    failure: Failure | None = None
    scope_kind: str = "none"
    scope_value: str | None = None
    mutated: bool = False
    content_type: str = "application/json"
    artefacts: tuple[tuple[str, bytes], ...] = ()  # (role, bytes): stored content-addressed
    derivation: tuple[str, ...] = field(default=())


def operational(code: str, message: str) -> Observed:
    return Observed(failure=Failure("operational", code, message))


def integrity(code: str, message: str) -> Observed:
    return Observed(failure=Failure("integrity", code, message))


Provider = Callable[[Mapping[str, Any]], Awaitable[Observed]]
