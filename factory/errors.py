"""The one typed error hierarchy of factory, and the one table of exit codes (SPEC F-2, F-3).

Every error a user can cause is a :class:`FactoryError` subclass carrying

* ``code``: a stable kebab-case identifier (``manifest-inside-root``), safe to put in a
  receipt: it never contains paths, secrets or provider output;
* ``message``: one line for a human, naming what to do next;
* ``exit_code``: fixed by the error's *family*, never by the call site.

The families are the exit codes of F-3, each with one meaning:

====  ===============  =========================================================
code  family           meaning
====  ===============  =========================================================
0     —                success
1     (any other)      internal error: a bug; traceback goes to a log file
2     UsageError       bad flags, or a refused precondition before any effect
3     —                rejected: a verdict, not a failure (never an exception)
4     Failure          typed failure after admission (provider, git, integrity)
130   Interrupted      Ctrl-C or cancellation; a terminal record is still written
====  ===============  =========================================================

A rejection is an *outcome*, so it is returned, not raised; :data:`EXIT_REJECTED` exists
so commands return it from the same table.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """Process exit codes (SPEC F-3). The only place these numbers are written."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    REJECTED = 3
    FAILURE = 4
    INTERRUPTED = 130


EXIT_REJECTED = ExitCode.REJECTED


class FactoryError(Exception):
    """Base of every error a user can cause.

    Args:
        message: one line for a human; says what happened and what to do next.
        code: overrides the class's default stable code (kebab-case).
    """

    exit_code: ClassVar[ExitCode] = ExitCode.INTERNAL
    default_code: ClassVar[str] = "internal"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code

    def diagnostics(self) -> str:
        """The single line printed to stderr: ``factory: <code>: <message>``."""
        return f"factory: {self.code}: {self.message}"


class UsageError(FactoryError):
    """Bad invocation or a refused precondition; nothing was changed (exit 2)."""

    exit_code = ExitCode.USAGE
    default_code = "usage"


class Refused(UsageError):
    """A precondition check said no before any effect (exit 2).

    Used for named refusals such as ``symlink-refused`` or ``output-exists``.
    """

    default_code = "refused"


class Failure(FactoryError):
    """A typed failure after admission: provider, git mutation, integrity (exit 4)."""

    exit_code = ExitCode.FAILURE
    default_code = "failure"


class IntegrityFailure(Failure):
    """Evidence, a log or a receipt does not match what it claims (exit 4)."""

    default_code = "integrity-violation"


class CorruptLog(IntegrityFailure):
    """An event log that does not parse or replay; it is never repaired (SPEC B-3)."""

    default_code = "corrupt-log"


class ProviderFailure(Failure):
    """A provider invocation ended without a usable result (SPEC P-4).

    Codes: ``provider-not-found``, ``provider-auth-required``, ``provider-network``,
    ``provider-timeout``, ``provider-output-limit``, ``provider-protocol``,
    ``provider-failed``.
    """

    default_code = "provider-failed"


class Interrupted(FactoryError):
    """The run was interrupted (Ctrl-C or cancellation) after admission (exit 130)."""

    exit_code = ExitCode.INTERRUPTED
    default_code = "interrupted"


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
