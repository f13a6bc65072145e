"""The one error registry of factory, and the one table of exit codes (SPEC F-2, F-3).

Every error a user can cause carries a :class:`Code`, defined exactly once, next to the
code that raises it, with :meth:`FactoryError.define`::

    TASK_REQUIRED = AdmissionRefused.define("task-required", "say what the worker should do")
    ...
    raise TASK_REQUIRED("--task is empty")

A code is

* a stable kebab-case name (``manifest-inside-root``), safe to put in a receipt: it never
  contains paths, secrets or provider output;
* the exception class that carries it, whose *family* fixes the exit code (never the call
  site);
* one line saying what to do next, appended to every message of that code.

Defining a name twice fails at import. ``tests/core/test_error_registry.py`` imports every
module of ``factory`` and ``providers`` and compares :func:`registered` with the golden list
``tests/core/golden/error-codes.tsv``: adding or changing a code is a reviewed diff of that
file in the same commit.

The families are the exit codes of F-3, each with one meaning:

====  ===============  =========================================================
code  family           meaning
====  ===============  =========================================================
0     —                success
1     FactoryError     internal error: a bug; traceback goes to the crash log
2     UsageError       bad flags, or a refused precondition before any effect
3     —                rejected: a verdict, not a failure (never an exception)
4     Failure          typed failure after admission (provider, git, integrity)
130   Interrupted      Ctrl-C or cancellation; a terminal record is still written
====  ===============  =========================================================

A rejection is an *outcome*, so it is returned, not raised. Once a command has reserved
its output (SPEC F-5), nothing is "before any effect" any more: a refusal found after the
reservation is a :class:`Failure` (4) recorded in the terminal document, never a 2 — with
one declared exception, the operator session, whose receipt is reserved before its
admission and which exits 2 for everything refused before its grant is spent (SPEC O;
``design/ARCHITECTURE.md``, "Exit codes").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, Generic, TypeVar

E = TypeVar("E", bound="FactoryError")
E_co = TypeVar("E_co", bound="FactoryError", covariant=True)

_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class ExitCode(IntEnum):
    """Process exit codes (SPEC F-3). The only place these numbers are written."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    REJECTED = 3
    FAILURE = 4
    INTERRUPTED = 130


@dataclass(frozen=True, slots=True, eq=False)
class Code(Generic[E_co]):
    """One registered error code. Calling it builds its error: ``raise CODE("what happened")``.

    Attributes:
        name: the stable kebab-case code printed and recorded.
        error: the exception class that carries it (its family gives the exit code).
        next_step: one line, what the user should do next; appended to every message.
    """

    name: str
    error: type[E_co]
    next_step: str

    @property
    def exit_code(self) -> ExitCode:
        return self.error.exit_code

    def __call__(self, fact: str) -> E_co:
        """The error for this code; ``fact`` says what happened (no advice: that is
        :attr:`next_step`)."""
        return self.error(fact, code=self)

    def __str__(self) -> str:
        return self.name


_REGISTRY: dict[str, Code[Any]] = {}


def registered() -> list[Code[Any]]:
    """Every code defined so far (import the defining modules first), sorted by name."""
    return sorted(_REGISTRY.values(), key=lambda c: c.name)


def lookup(name: str) -> Code[Any] | None:
    """The registered code called ``name``, if its module has been imported."""
    return _REGISTRY.get(name)


class FactoryError(Exception):
    """Base of every typed error; by itself the internal family (exit 1, crash log).

    Args:
        fact: one line for a human saying what happened; the code's next step is appended.
        code: the registered :class:`Code`; defaults to the class's :attr:`default`.

    Attributes:
        code: the stable code name (str), as printed and recorded.
        spec: the registered :class:`Code`.
        fact: what happened.
        message: ``fact; next step`` — the one line a user sees.
    """

    exit_code: ClassVar[ExitCode] = ExitCode.INTERNAL
    default: ClassVar[Code[Any] | None] = None

    def __init__(self, fact: str, *, code: Code[Any] | None = None) -> None:
        spec = code if code is not None else type(self).__dict__.get("default")
        if spec is None:
            raise TypeError(f"{type(self).__name__} needs a registered code")
        if spec.error is not type(self):
            raise TypeError(f"code {spec.name} belongs to {spec.error.__name__}")
        self.spec: Code[Any] = spec
        self.code: str = spec.name
        self.fact = fact
        self.message = f"{fact}; {spec.next_step}" if spec.next_step else fact
        super().__init__(self.message)

    @classmethod
    def define(cls: type[E], name: str, next_step: str, *, default: bool = False) -> Code[E]:
        """Register code ``name`` for this class, once in the whole program.

        ``default=True`` makes it the code of ``cls(...)`` built without one.
        """
        if not _NAME.fullmatch(name):
            raise ValueError(f"error code {name!r} is not kebab-case")
        if name in _REGISTRY:
            raise ValueError(f"error code {name!r} is defined twice")
        if not next_step.strip() or "\n" in next_step:
            raise ValueError(f"error code {name!r} needs a one-line next step")
        code: Code[E] = Code(name, cls, next_step)
        _REGISTRY[name] = code
        if default:
            if cls.__dict__.get("default") is not None:
                raise ValueError(f"{cls.__name__} already has a default code")
            cls.default = code
        return code

    def diagnostics(self) -> str:
        """The single line printed to stderr: ``factory: <code>: <message>``."""
        return f"factory: {self.code}: {self.message}"

    def shown(self) -> str:
        """:meth:`diagnostics` as a terminal shows it: the fact inert and capped, the
        next step whole (see :func:`factory.display.error_line`)."""
        from factory.display import error_line

        return error_line(self.code, self.fact, self.spec.next_step)


class UsageError(FactoryError):
    """Bad invocation or a refused precondition; nothing was changed (exit 2)."""

    exit_code = ExitCode.USAGE


class Refused(UsageError):
    """A precondition check said no before any effect (exit 2)."""


class Failure(FactoryError):
    """A typed failure after admission: provider, git mutation, integrity (exit 4)."""

    exit_code = ExitCode.FAILURE


class IntegrityFailure(Failure):
    """Evidence, a log or a receipt does not match what it claims (exit 4)."""


class CorruptLog(IntegrityFailure):
    """An event log that does not parse or replay; it is never repaired (SPEC B-3)."""


class ProviderFailure(Failure):
    """A provider invocation ended without a usable result (SPEC P-4); the codes are
    defined in :mod:`factory.provider_api`.

    ``partial``: what the invocation left behind when its profile attached it (a
    ``factory.provider_api.ProviderResult``: CLI version, argv shape, captured streams),
    so a failed phase keeps its evidence; see ``provider_api.with_partial``.
    """

    partial: object | None = None


class Interrupted(FactoryError):
    """The run was interrupted (Ctrl-C or cancellation) after admission (exit 130)."""

    exit_code = ExitCode.INTERRUPTED


INTERNAL = FactoryError.define(
    "internal",
    "this is a bug in factory: report it with the crash log named on stderr",
    default=True,
)
INTERRUPTED = Interrupted.define(
    "interrupted", "rerun it on a clean worktree with a new --out", default=True
)
USAGE = UsageError.define("usage", "run the command with --help to see its flags", default=True)
# One code for argv text that is not UTF-8, whichever command meets it (a CLI flag, the bus
# smoke's request): what a command records is JSON text, which cannot hold lone surrogates.
ARGUMENT_NOT_UTF8 = UsageError.define(
    "argument-not-utf8", "pass it as UTF-8 (what a command records is JSON text)"
)

# One code for input nested deeper than the parsers' recursion allows (a TOML scenario, a
# forge's JSON), whichever reader meets it: a RecursionError is bad input, not a bug.
INPUT_TOO_DEEP = UsageError.define(
    "input-too-deep", "flatten the document: it is nested deeper than factory reads"
)


def exit_code_for(error: BaseException) -> ExitCode:
    """Map any exception to its exit code (SPEC F-3).

    ``KeyboardInterrupt`` is 130; a :class:`FactoryError` takes its family's code; anything
    else is an internal error (1).
    """
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(error, FactoryError):
        return error.exit_code
    return ExitCode.INTERNAL
