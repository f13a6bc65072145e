"""The ``factory.demo-report/1`` document: where the demo ran, how the run ended, and
what ``factory receipt verify`` found (SPEC P-5: a rehearsal says it is one)."""

from __future__ import annotations

import json
from typing import Final, Literal

from pydantic import Field

from factory.agent.verification import ReceiptVerification
from factory.models import StrictModel
from factory.provider_api import REHEARSAL_EXECUTION

DEMO_REPORT_SCHEMA: Final = "factory.demo-report/1"


class DemoReport(StrictModel):
    """``factory.demo-report/1``; ``verification`` is ``None`` when the receipt could not
    be verified at all (its error is on stderr)."""

    schema_id: Literal["factory.demo-report/1"] = Field(default=DEMO_REPORT_SCHEMA, alias="schema")
    execution: Literal[
        "rehearsal: scripted loopback model; proves the control path, nothing about model judgement"
    ] = REHEARSAL_EXECUTION
    demo_dir: str = Field(alias="demoDir")
    receipt: str
    exit_code: int = Field(alias="exitCode")
    verification: ReceiptVerification | None
    next: str

    def data(self) -> bytes:
        """The bytes written to ``demo-report.json`` and printed with ``--json``: the JSON
        value indented by two, in field order, plus LF."""
        return (json.dumps(self.to_json_value(), ensure_ascii=False, indent=2) + "\n").encode()
