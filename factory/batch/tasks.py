"""The tasks file, ``factory.batch-tasks/1``: TOML (``[[tasks]]`` tables under
``schema = "factory.batch-tasks/1"``) or JSONL (one task object per line).

A task: ``id`` (1-64 of ``[A-Za-z0-9._-]``, unique), ``task`` (the text given to the worker),
and optionally ``base`` (a revision; default the batch's), ``test`` (argv of the test
command), ``labels``, ``queue`` (the Temporal task queue whose workers hold the right login).
Unknown keys, duplicate ids, an empty text and a file over 16 MiB are refused by name.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, ValidationError

from factory.documents.canonical import sha256_hex
from factory.errors import UsageError
from factory.models import StrictModel

TASKS_SCHEMA: Final = "factory.batch-tasks/1"
MAX_TASKS_BYTES = 16 * 1024 * 1024
MAX_TASKS = 10_000


class TasksRefused(UsageError):
    """The tasks file cannot be used (nothing ran)."""


TASKS_INVALID = TasksRefused.define(
    "batch-tasks-invalid", "fix the tasks file at the place the message names"
)
TASKS_UNREADABLE = TasksRefused.define(
    "batch-tasks-unreadable", "name a readable TOML (.toml) or JSONL (.jsonl) tasks file"
)


class BatchTask(StrictModel):
    """One task of a batch."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    task: str = Field(min_length=1, max_length=100_000)
    base: str | None = Field(default=None, min_length=1, max_length=256)
    test: list[str] | None = Field(default=None, min_length=1)
    labels: list[str] = Field(default_factory=list)
    queue: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class TasksFile(StrictModel):
    """The TOML form: the schema id and the tasks."""

    schema_id: Literal["factory.batch-tasks/1"] = Field(alias="schema")
    tasks: list[BatchTask] = Field(min_length=1, max_length=MAX_TASKS)


def _where(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top)"
    return f"{loc}: {first['msg']}"


def _from_toml(data: bytes) -> list[BatchTask]:
    try:
        value = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise TASKS_INVALID(f"not TOML: {str(exc)[:200]}") from None
    try:
        return TasksFile.model_validate(value).tasks
    except ValidationError as exc:
        raise TASKS_INVALID(_where(exc)) from None


def _from_jsonl(data: bytes) -> list[BatchTask]:
    from factory.documents.canonical import unique_keys

    tasks: list[BatchTask] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line.decode("utf-8"), object_pairs_hook=unique_keys)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise TASKS_INVALID(f"line {number}: not JSON ({str(exc)[:120]})") from None
        if isinstance(value, dict) and value.pop("schema", TASKS_SCHEMA) != TASKS_SCHEMA:
            raise TASKS_INVALID(f"line {number}: schema is not {TASKS_SCHEMA}")
        try:
            tasks.append(BatchTask.model_validate(value))
        except ValidationError as exc:
            raise TASKS_INVALID(f"line {number}: {_where(exc)}") from None
    if not tasks:
        raise TASKS_INVALID("the file holds no task")
    return tasks


def load_tasks(path: Path) -> tuple[list[BatchTask], str]:
    """The tasks of ``path`` and the SHA-256 of its bytes."""
    from factory.agent.evidence import read_nofollow

    try:
        data = read_nofollow(path, limit=MAX_TASKS_BYTES + 1)
    except OSError as exc:
        raise TASKS_UNREADABLE(f"{path.name}: {exc.strerror or exc}") from None
    if len(data) > MAX_TASKS_BYTES:
        raise TASKS_INVALID("the tasks file is over 16 MiB")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        tasks = _from_toml(data)
    elif suffix in (".jsonl", ".ndjson"):
        tasks = _from_jsonl(data)
    else:
        raise TASKS_UNREADABLE("the tasks file must end in .toml or .jsonl")
    ids = [t.id for t in tasks]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise TASKS_INVALID(f"two tasks have the id {dup!r}")
    if len(tasks) > MAX_TASKS:
        raise TASKS_INVALID(f"over {MAX_TASKS} tasks")
    if any(not t.task.strip() for t in tasks):
        raise TASKS_INVALID("a task's text is blank")
    return tasks, sha256_hex(data)
