"""Strict argument parsing and the single error handler around every command (SPEC F-2, F-3).

* :class:`StrictParser` refuses unknown flags, abbreviations and a flag given twice
  (``store``, ``store_true``, ``store_false``, ``store_const``; ``append`` and ``count``
  stay repeatable on purpose), by raising :class:`~factory.errors.UsageError` (exit 2)
  instead of printing argparse's own usage dump.
* :func:`run_command` maps every exception to its exit code in one place. An internal
  error writes its traceback to a log file and prints only where that file is.

stdout is for the final machine-readable output only (:func:`emit_stdout`); every
diagnostic goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from factory.crashlog import write_crash_log
from factory.errors import (
    ARGUMENT_NOT_UTF8,
    INPUT_TOO_DEEP,
    USAGE,
    ExitCode,
    FactoryError,
    Failure,
    UsageError,
)

_SEEN = "_factory_seen_options"
DUPLICATE_FLAG = UsageError.define("duplicate-flag", "give each flag once")
OUTPUT_WRITE_FAILED = Failure.define(
    "output-write-failed",
    "read the result where it is kept; do not rerun: the effect has already happened",
)
_HELP = "_factory_print_help"


class _Once(argparse.Action):
    """``store`` that refuses a second occurrence of the same option."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        _mark_seen(namespace, self.dest, option_string)
        setattr(namespace, self.dest, values)


class _OnceConst(argparse.Action):
    """``store_true``/``store_false``/``store_const`` that refuses a second occurrence."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        const: Any = True,
        default: Any = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, const=const, default=default, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        _mark_seen(namespace, self.dest, option_string)
        setattr(namespace, self.dest, self.const)


def _mark_seen(namespace: argparse.Namespace, dest: str, option_string: str | None) -> None:
    seen: set[str] = getattr(namespace, _SEEN, None) or set()
    if dest in seen:
        raise DUPLICATE_FLAG(f"{option_string or dest} was given more than once")
    seen.add(dest)
    setattr(namespace, _SEEN, seen)


class StrictParser(argparse.ArgumentParser):
    """ArgumentParser that raises :class:`UsageError` and refuses duplicate flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        # The innermost parser that matched overwrites this default, so a command group
        # given without its subcommand (`factory bus`) prints its own help, not the top's.
        self.set_defaults(**{_HELP: self.print_help})

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if args and str(args[0]).startswith("-"):
            action = kwargs.get("action")
            if action in (None, "store"):
                kwargs["action"] = _Once
            elif action == "store_true":
                kwargs.update(action=_OnceConst, const=True)
                kwargs.setdefault("default", False)
            elif action == "store_false":
                kwargs.update(action=_OnceConst, const=False)
                kwargs.setdefault("default", True)
            elif action == "store_const":
                kwargs["action"] = _OnceConst
                kwargs.setdefault("default", None)
        return super().add_argument(*args, **kwargs)

    words: list[str] | None = None  # what parse_args was given, to name the subcommand

    def error(self, message: str) -> NoReturn:
        prog = self.prog
        if message.startswith("unrecognized arguments") and self.words is not None:
            # argparse reports leftovers from the top parser: name the command they follow.
            from factory.cli.config_apply import command_path

            command, _ = command_path(self, self.words)
            prog = f"{self.prog} {command}" if command else prog
        raise USAGE(f"{prog}: {message}")


Handler = Callable[[argparse.Namespace], int]

if TYPE_CHECKING:
    from typing import TypeAlias

    # What every command module's ``register(sub)`` receives from ``factory.cli.main``.
    Subcommands: TypeAlias = argparse._SubParsersAction[StrictParser]


def emit_stdout(data: bytes, *, kept_in: str | None = None) -> None:
    """Write the command's final machine output to stdout, exactly these bytes.

    ``kept_in`` names where the result is recorded besides stdout (a receipt, the event
    log), for a command whose effect has already happened when it prints.

    Raises:
        FactoryError: ``output-write-failed`` (exit 4) when stdout refuses the bytes (a full
            device, an I/O error): the effect stands and ``kept_in`` holds it, so the exit
            code says "not done as asked" and the message says "do not rerun" (SPEC F-3).
            A reader that went away (a closed pipe, ``| head``) is not a failure: the rest
            is dropped and the command ends with its own exit code.
    """
    if sys.stdout is None:  # the caller closed fd 1: nowhere to write; the files stand
        where = f"; it is kept in {kept_in}" if kept_in else ""
        say(f"factory: stdout is closed: the output was not printed{where}")
        return
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        _drop_stdout()  # the reader has what it wanted; the exit code stays the command's
    except OSError as exc:
        _drop_stdout()
        where = f"; the result is kept in {kept_in}" if kept_in else ""
        raise OUTPUT_WRITE_FAILED(
            f"stdout could not be written ({exc.strerror or exc}){where}"
        ) from None


class GuardedStdout:
    """``sys.stdout`` for a renderer that writes as it goes (rich): the first write error
    (a full device, an I/O error) is kept and later writes are dropped, so the command can
    finish what it does besides printing (an HTML page) and then report the failure as
    ``output-write-failed`` (:meth:`check`), never as an internal error. A reader that went
    away (a closed pipe) is not a failure: later writes are dropped and nothing is raised."""

    def __init__(self) -> None:
        self.stream = sys.stdout
        self.error: OSError | None = None
        self.gone = False

    def write(self, text: str) -> int:
        if self.error is None and not self.gone and self.stream is not None:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
            except OSError as exc:
                self.error = exc
        return len(text)

    def flush(self) -> None:
        if self.error is None and not self.gone and self.stream is not None:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_gone()
            except OSError as exc:
                self.error = exc

    def _reader_gone(self) -> None:
        """The reader closed the pipe (``| head``): it has what it wanted, so the rest is
        dropped and the command still ends as its own work decides (not a failure)."""
        self.gone = True
        _drop_stdout()

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def fileno(self) -> int:
        if self.stream is None:
            raise OSError("stdout is closed")
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    def check(self, *, kept_in: str | None = None) -> None:
        """Raise ``output-write-failed`` (exit 4) when a write failed."""
        self.flush()
        if self.error is not None:
            _drop_stdout()
            where = f"; the result is kept in {kept_in}" if kept_in else ""
            raise OUTPUT_WRITE_FAILED(
                f"stdout could not be written ({self.error.strerror or self.error}){where}"
            )


def _drop_stdout() -> None:
    """Point ``sys.stdout`` at nothing, so the interpreter's flush at exit does not fail
    again on the same bytes (it would turn the exit code into 120)."""
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # not a file descriptor (an in-process capture): nothing flushes it at exit


def say(message: str) -> None:
    """One diagnostic line on stderr (dropped when the caller closed fd 2: ``print`` would
    otherwise fall back to stdout, which carries only the final output; dropped too when
    stderr itself cannot be written — nothing could report that)."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError):
            print(message, file=sys.stderr, flush=True)


def refuse_non_utf8(args: object, flags: Mapping[str, str]) -> None:
    """Refuse (exit 2) a flag whose argv bytes are not UTF-8 (Python hands them over as lone
    surrogates): a receipt or report records it as JSON text, which cannot hold them.

    ``flags`` maps an attribute of ``args`` (parsed flags, or a typed call built from them)
    to the flag shown (``{"task": "--task"}``); a path attribute is judged by its text.
    """
    for dest, flag in flags.items():
        value = getattr(args, dest, None)
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ARGUMENT_NOT_UTF8(f"{flag} is not valid UTF-8") from None


def refuse_non_utf8_argv(argv: Sequence[str]) -> None:
    """Refuse (exit 2) any command-line word that is not UTF-8, before the command runs:
    every command records or prints its arguments as JSON or text, which cannot hold them
    (Python hands such bytes over as lone surrogates). The word is named by its position
    and the flag it belongs to, never echoed. A command whose contract names its own code
    for such input sets ``own_utf8_refusals`` (``factory digest``: ``name-not-utf8``)."""
    for number, word in enumerate(argv, start=1):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            flag = word.partition("=")[0] if word.startswith("--") and "=" in word else None
            if flag is None and number > 1 and argv[number - 2].startswith("-"):
                flag = argv[number - 2]
            what = f"the value of {flag}" if flag and _printable(flag) else f"argument {number}"
            raise ARGUMENT_NOT_UTF8(f"{what} is not valid UTF-8") from None


def _printable(word: str) -> bool:
    return word.isascii() and word.isprintable()


def default_state_dir() -> Path:
    """The default runtime folder: ``$FACTORY_STATE_DIR``, else the checkout's ``state/``.

    When factory is installed outside a checkout (no ``state/`` beside the package), the
    user's ``$XDG_STATE_HOME/factory`` (default ``~/.local/state/factory``) is used.
    """
    explicit = os.environ.get("FACTORY_STATE_DIR")
    if explicit:
        return Path(explicit)
    checkout_state = Path(__file__).resolve().parents[2] / "state"
    if checkout_state.is_dir():
        return checkout_state
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "factory"


def _write_crash_log(args: argparse.Namespace | None, exc: BaseException) -> Path | None:
    data_dir = getattr(args, "data_dir", None) if args is not None else None
    if getattr(args, "read_only", False):
        data_dir = None  # a read-only command (bus verify) writes nothing into what it reads
    candidates = []
    if data_dir and Path(data_dir).is_dir():
        candidates.append(Path(data_dir) / "logs")
    candidates.append(default_state_dir() / "logs")
    return write_crash_log(exc, candidates)


def _internal(args: argparse.Namespace | None, exc: BaseException) -> int:
    """Every internal error, typed or not: the crash log, one line naming it, exit 1."""
    log = _write_crash_log(args, exc)
    where = f"; traceback in {log}" if log else "; the traceback could not be written"
    name = exc.code if isinstance(exc, FactoryError) else type(exc).__name__
    say(f"factory: internal error ({name}){where}")
    return int(ExitCode.INTERNAL)


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str]) -> int:
    """Parse ``argv``, run the chosen handler and map the outcome to an exit code."""
    args: argparse.Namespace | None = None
    try:
        from factory.cli.config_apply import parse_with_config

        args = parse_with_config(parser, argv)  # factory.toml fills the flags left out
        if not getattr(args, "own_utf8_refusals", False):
            refuse_non_utf8_argv(argv)
        handler: Handler | None = getattr(args, "handler", None)
        if handler is None:
            print_help: Callable[..., None] = getattr(args, _HELP, parser.print_help)
            if sys.stderr is not None:  # print_help(None) would write to stdout
                print_help(sys.stderr)
            return int(ExitCode.USAGE)
        return int(handler(args))
    except FactoryError as exc:
        if exc.exit_code == ExitCode.INTERNAL:
            return _internal(args, exc)
        # Messages may quote a path or a provider's words: inert before a terminal shows
        # them; the code's next step is shown whole.
        say(exc.shown())
        if args is not None and getattr(args, "config_sources", None):
            from factory.cli.config_apply import provenance_line

            say(provenance_line(args))  # a refused value may have come from a file
        return int(exc.exit_code)
    except KeyboardInterrupt:
        say("factory: interrupted")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # The reader of stdout went away; nothing useful can be printed.
        return int(ExitCode.INTERNAL)
    except RecursionError:
        # Any reader (tomllib, json, pydantic) that met input nested too deep: bad input.
        say(INPUT_TOO_DEEP("an input is nested too deep to read").diagnostics())
        return int(ExitCode.USAGE)
    except Exception as exc:
        return _internal(args, exc)
