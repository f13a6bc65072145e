"""``factory.config-show/1``: the effective value of every ``factory.toml`` key and where it
came from (a flag too, when a command line is given after ``--``) — published (``factory
schema config-show``), printed by ``factory config show --json``. Paths are shown as read;
a secret is never in it (such a file is refused)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from factory.models import StrictModel

SCHEMA: Final = "factory.config-show/1"

Value = str | int | float | list[str] | None
Source = Literal["flag", "repository", "user", "default"]


class SearchedFile(StrictModel):
    """One file factory reads: whose, where, and whether it is there."""

    role: Literal["repository", "user"]
    path: str
    present: bool


class ConfigValue(StrictModel):
    """One key: the dest and flag it feeds, in which commands, its value and its source."""

    key: str
    flag: str
    dest: str
    commands: list[str]
    value: Value
    source: Source
    file: str | None
    repository_may_set: bool


class ConfigShow(StrictModel):
    """What ``factory config show`` reports for one repository (or none) and this user."""

    schema_id: Literal["factory.config-show/1"] = Field(default=SCHEMA, alias="schema")
    command: str | None = Field(
        description="the command whose words were given after '--' (its keys only), or null"
    )
    files: list[SearchedFile]
    values: list[ConfigValue]
