"""``factory batch run --from-forge OWNER/NAME [--label L]``: the tasks of a batch are the
forge's open issues carrying the label, read as ``factory operator plan`` reads them (every
page, the same client, the same task text), one task per issue, ``issue-<number>``."""

from __future__ import annotations

from factory.batch.tasks import TASKS_INVALID, BatchTask


def forge_tasks(repository: str, label: str, forge_url: str | None) -> tuple[list[BatchTask], str]:
    """The tasks, and the revision of the forge snapshot they came from."""
    import os

    from factory.operator.forge import (
        DEFAULT_FORGE,
        check_forge_url,
        check_label,
        check_repository,
        find_token,
    )
    from factory.operator.forge_client import Forge
    from factory.operator.intent import snapshot, task_for

    check_repository(repository)
    check_label(label)
    url = check_forge_url(forge_url if forge_url is not None else DEFAULT_FORGE)
    token = find_token(url)
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        os.environ.pop(name, None)  # no child process of ours can inherit it
    with Forge(url, token) as forge:
        items = forge.open_issues(repository, label)
    snap = snapshot(url, repository, label, items)
    ready = sorted(
        (i for i in snap.items if i.kind == "issue" and label in i.labels), key=lambda i: i.number
    )
    if not ready:
        raise TASKS_INVALID(f"no open issue of {repository} carries the label {label!r}")
    tasks = [
        BatchTask(
            id=f"issue-{item.number}",
            task=task_for(repository, item.number, item.title),
            labels=list(item.labels),
        )
        for item in ready
    ]
    return tasks, snap.revision()
