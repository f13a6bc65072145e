"""The entry state of an admitted run: the base record and the raw baseline (SPEC A-3).

Recorded once, after the reservation and before the worker starts:

* HEAD's commit and tree (from admission), the index tree, the branch HEAD names;
* the effective ``core.autocrlf`` / ``core.eol`` / ``core.fileMode`` / ``core.symlinks`` and
  the SHA-256 of every ``.gitattributes`` in the base tree — what git's own conversions
  would use;
* the raw baseline (:func:`factory.gitio.snapshot.take_baseline`): which base paths' bytes
  on disk differ from their blobs (a converting checkout), stored as evidence
  ``entry-divergence`` when there are any, so ``receipt verify`` re-derives the candidate
  from the same reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from factory.agent.evidence import EvidenceStore
from factory.agent.receipt import AttributesFile, BaseRecord, GitSettings
from factory.gitio.config import read_config
from factory.gitio.conversions import attributes_files
from factory.gitio.run import GitFailure
from factory.gitio.snapshot import Baseline, encode_divergence, take_baseline
from factory.gitio.worktree import Worktree, head_ref, index_tree

DIVERGENCE_MEDIA = "application/x-git-index-info-z"


@dataclass(frozen=True)
class Entry:
    """The base record for the receipt and the baseline for every derivation."""

    record: BaseRecord
    baseline: Baseline


def record_entry(wt: Worktree, commit: str, tree: str, store: EvidenceStore) -> Entry:
    """Read the entry state (see the module docstring); stores at most one evidence file.

    Raises:
        GitFailure: a git query failed, or the index holds no tree.
        EvidenceFailure: the divergence list could not be stored.
    """
    index = index_tree(wt)
    if index is None:
        raise GitFailure("the index could not be read as a tree")
    cfg = read_config(wt.root)
    baseline = take_baseline(wt.root, tree, cfg)
    divergence = None
    if baseline.divergent:
        data = encode_divergence(baseline.divergent)
        divergence = store.put("entry-divergence", data, DIVERGENCE_MEDIA)
    record = BaseRecord(
        commit=commit,
        tree=tree,
        index_tree=index,
        branch=head_ref(wt),
        git_settings=GitSettings(**cfg.settings()),
        gitattributes=[
            AttributesFile(path=p, sha256=s) for p, s in attributes_files(wt.root, tree)
        ],
        entry_divergence=divergence,
    )
    return Entry(record, baseline)
