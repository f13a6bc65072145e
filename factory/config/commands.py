"""The commands a ``factory.toml`` key can feed, as plain names: what the CLI checks on
every command line (a git hook's included) before it imports anything of the config.
``tests/config/test_table.py`` holds :data:`CONFIGURED` equal to the table's commands."""

from __future__ import annotations

AGENT, BATCH_RUN, WORKER = "agent", "batch run", "worker"
OP_PLAN, OP_RUN, OP_PUBLISH = "operator plan", "operator run", "operator publish"
PUBLISH, REVIEW_LENS = "publish", "review lens"

CONFIGURED = frozenset(
    (AGENT, BATCH_RUN, WORKER, OP_PLAN, OP_RUN, OP_PUBLISH, PUBLISH, REVIEW_LENS)
)


def help_epilog(command: str) -> str:
    """The one ``--help`` line saying a config file may fill the command's flags."""
    return (
        f"factory.toml (yours, or the repository's) may fill these flags; a flag you give wins. "
        f"Defaults shown are the built-in ones: 'factory config show -- {command}' shows the "
        "values in effect and where each comes from."
    )
