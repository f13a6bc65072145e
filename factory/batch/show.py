"""``factory batch show``: a batch as an operator reviews it — terminal text, and one HTML
page (jinja2, autoescaped) linking each receipt's own page. Everything shown is re-checked
now (:func:`factory.batch.report.verify_batch`), and untrusted text is made inert."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from factory.batch.report import load_report, verify_batch


def _facts(folder: Path) -> dict[str, Any]:
    report, _ = load_report(folder)
    check = verify_batch(folder)
    by_id = {t["id"]: t for t in check["tasks"]}
    tasks = [
        {
            "id": t.id,
            "outcome": t.outcome,
            "attempts": t.attempts,
            "receipt": t.receipt,
            "ok": by_id[t.id]["ok"],
            "check": _check_word(t.receipt, by_id[t.id]),
        }
        for t in report.tasks
    ]
    bad = [t for t in tasks if t["outcome"] != "completed"]
    if not check["ok"]:
        headline = "Batch does NOT verify: " + "; ".join(check["problems"][:3])
    elif bad:
        headline = f"{len(tasks) - len(bad)} of {len(tasks)} tasks completed — batch intact"
    else:
        headline = f"All {len(tasks)} tasks completed — batch intact"
    return {
        "batch_id": report.batch_id,
        "engine": report.engine,
        "rehearsal": report.route == "rehearsal",
        "repository": report.repository,
        "base_commit": report.base_commit,
        "folder": os.fspath(folder),
        "checked_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "headline": headline,
        "ok": check["ok"] and not bad,
        "verified": check["ok"],
        "tasks": tasks,
    }


def _check_word(receipt: str | None, entry: dict[str, Any]) -> str:
    """What the check of this task's receipt found, in words: a task with no receipt (refused,
    never started) or one the report does not bind by revision claims nothing."""
    if receipt is None:
        return "no receipt"
    if not entry["receipt_checked"]:
        return "not bound"
    return "verifies" if entry["ok"] else "DOES NOT VERIFY"


def render_text(folder: Path) -> tuple[str, bool]:
    from factory.display import inert

    f = _facts(folder)
    lines = [inert(f["headline"]), f"batch {f['batch_id']} ({f['engine']} engine)"]
    if f["rehearsal"]:
        lines.append("REHEARSAL: a scripted model stood in for the providers")
    lines.append("")
    width = max(len(t["id"]) for t in f["tasks"])
    for t in f["tasks"]:
        receipt = inert(t["receipt"] or "")
        line = f"  {t['id']:<{width}}  {t['outcome']:<11} {t['check']:<15} {receipt}"
        lines.append(line.rstrip())
    from factory.usercmd import factory_command

    # Commands that work as typed where the user stands (.venv/bin/factory … when factory
    # is not on PATH), as the demo's and the agent's closing blocks print them.
    lines += ["", "next:", "  " + inert(factory_command("batch", "verify", Path(f["folder"])))]
    # A receipt that does not verify first: 'receipt verify' names what differs and where
    # the candidate is now (e.g. a file a test command left in the worktree).
    failing = next((t for t in f["tasks"] if t["receipt"] and not t["ok"]), None)
    first = failing or next((t for t in f["tasks"] if t["receipt"]), None)
    if first is not None:
        receipt = Path(f["folder"]) / first["receipt"]
        verb = "verify" if failing is not None else "show"
        lines.append("  " + inert(factory_command("receipt", verb, receipt)))
    return "\n".join(lines) + "\n", bool(f["verified"])


def render_html(folder: Path, out: Path) -> None:
    """The batch page at ``out``, and each receipt's page beside its receipt."""
    import jinja2

    from factory.fsio import atomic_replace

    f = _facts(folder)
    for t in f["tasks"]:
        t["page"] = _receipt_page(folder, t["receipt"], out) if t["receipt"] else None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("factory.batch", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    atomic_replace(out, env.get_template("batch.html.j2").render(**f).encode("utf-8"))


def _receipt_page(folder: Path, receipt: str, out: Path) -> str | None:
    from rich.console import Console

    from factory.agent.receipt_html import render_html as receipt_html
    from factory.agent.receipt_show import render_verified
    from factory.agent.verify import load_receipt, verify
    from factory.errors import FactoryError
    from factory.fsio import atomic_replace

    path = folder / receipt
    try:
        parsed, _ = load_receipt(path)
        facts = render_verified(
            parsed, verify(path).to_json_value(), Console(file=open(os.devnull, "w")),  # noqa: SIM115
            receipt_path=path, diff=False,
        )  # fmt: skip
    except FactoryError:
        return None
    page = path.with_suffix(".html")
    atomic_replace(page, receipt_html(facts, path).encode("utf-8"))
    return os.path.relpath(page, out.parent.absolute())
