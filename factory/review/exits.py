"""The command that takes each anomaly of the store out of the way (issue 23 §1).

Every answer about a corrupt or invalid record names, first, the ceremony that makes
progress for it — ``reclaim`` for an entry without a record, ``repair`` for any other
class — never a command that only shows it again. When a class has several anomalies, the
``repair`` named for each lists every other one of the class with ``--also-invalid``: one
patient per ceremony, the others named explicitly (and bound by the proof digest the
maintainer authorizes), never an amnesty for the class.
"""

from __future__ import annotations

from collections.abc import Iterable

from factory.review import nextcmd
from factory.review.ceremony import Anomaly, census
from factory.review.graph import LineageGraph, build_graph
from factory.review.store import ReviewStore


def others_of(anomaly: Anomaly, found: list[Anomaly]) -> list[str]:
    """The keys of the other anomalies of ``anomaly``'s class, in census order."""
    return [
        a.key for a in found if a.anomaly_class == anomaly.anomaly_class and a.key != anomaly.key
    ]


def exit_command(anomaly: Anomaly, found: list[Anomaly], member: str) -> str:
    """The ceremony that takes ``member`` of ``anomaly`` out of the store."""
    if anomaly.anomaly_class == "incomplete-entry":
        return nextcmd.reclaim(member)
    return nextcmd.repair(member, anomaly.anomaly_class, others_of(anomaly, found))


def _patients(anomaly: Anomaly) -> tuple[str, ...]:
    """The members a ceremony may take: a fork's successors, else the one member."""
    if anomaly.key.startswith("fork:"):
        return anomaly.members[1:]
    return anomaly.members


def patient(anomaly: Anomaly) -> str:
    """The member a ceremony takes first (a fork's first successor)."""
    return _patients(anomaly)[0]


def exit_commands(store: ReviewStore, graph: LineageGraph | None = None) -> dict[str, str]:
    """For each lineage in an anomaly, the first command that makes progress for it."""
    found = census(store, graph if graph is not None else build_graph(store.scan()))
    out: dict[str, str] = {}
    for anomaly in found:
        patients = _patients(anomaly)
        for member in anomaly.members:
            target = member if member in patients else patients[0]
            out.setdefault(member, exit_command(anomaly, found, target))
    return out


def exits_for(
    store: ReviewStore, lineages: Iterable[str] | None = None, graph: LineageGraph | None = None
) -> tuple[str, ...]:
    """The progress commands for ``lineages`` (every anomaly when None), without repeats."""
    table = exit_commands(store, graph)
    wanted = table.keys() if lineages is None else [x for x in lineages if x in table]
    return tuple(dict.fromkeys(table[x] for x in sorted(wanted)))
