"""``factory completion bash|zsh|fish``: the shell completion script, on stdout (issue 28).

The script is argcomplete's: at each TAB the shell runs ``factory`` again with
``_ARGCOMPLETE`` set, and :func:`complete_if_asked` answers from the real parser (every
command registered), so completion never lags behind the installed version. argcomplete
is imported only in that case or by this command: an ordinary ``factory …`` pays one
environment look-up for it (in :func:`factory.cli.main.main`). See design/cli.md (shell
completion) for the alternatives.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

SHELLS = ("bash", "zsh", "fish")

HELP = "print the shell completion script for bash, zsh or fish"

INSTALL = {
    "bash": "mkdir -p ~/.local/share/bash-completion/completions && "
    "factory completion bash > ~/.local/share/bash-completion/completions/factory",
    "zsh": "mkdir -p ~/.zfunc && factory completion zsh > ~/.zfunc/_factory  "
    "(with fpath+=(~/.zfunc); autoload -Uz compinit; compinit in ~/.zshrc)",
    "fish": "mkdir -p ~/.config/fish/completions && "
    "factory completion fish > ~/.config/fish/completions/factory.fish",
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "completion",
        help=HELP,
        description=(
            "Print the completion script for SHELL on stdout. Install it once; a new shell\n"
            "then completes factory's commands, subcommands and options. The script asks\n"
            "factory itself at each TAB, so it stays right after an upgrade. Exit 0."
        ),
        epilog="install:\n" + "".join(f"  {shell}: {line}\n" for shell, line in INSTALL.items()),
    )
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    p.set_defaults(handler=_handle)


def script(shell: str) -> str:
    """The completion script of ``shell`` for the ``factory`` command."""
    from argcomplete.shell_integration import shellcode

    return shellcode(["factory"], shell=shell)


def _handle(args: argparse.Namespace) -> int:
    from factory.cli.framework import emit_stdout

    emit_stdout(script(args.shell).encode("utf-8"))
    return 0


def complete(build: Callable[[], argparse.ArgumentParser]) -> None:
    """Answer the shell's completion function (which runs factory with ``_ARGCOMPLETE``
    set) from the full parser, and exit; return when that variable is not set."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(build())
