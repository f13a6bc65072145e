"""Review transactions (SPEC §6, R): the model judges; code owns identity, ids, hashes,
budget, state and the receipt.

Layers inside this package (imports point down):

* pure core — ``names``, ``canon``, ``judgement`` (strict model inputs), ``results``
  (code-assigned ids, canonical order, hashes), ``risk``, ``policy``, ``state`` (the
  record and its invariants), ``admission`` (the causal matrix), ``correction`` (budget
  arithmetic), ``machine`` (the transition function and the legal next commands),
  ``receipt`` (the 14-field terminal receipt);
* effects — ``lock`` and ``store`` (the CAS store under the git common dir),
  ``snapshot`` (git, through :mod:`factory.gitio`), ``lens`` (the read-only reviewer
  profile), ``evidence_run`` (a supervised command as final evidence);
* ``service`` — one function per command, wiring the two together; ``render`` for
  ``show``.

See ``design/review.md``.
"""
