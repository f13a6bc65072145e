"""Operator publication (SPEC §5): a person's single-use Ed25519 grant is the only path to
a privileged effect — one agent run, or one commit + leased push + pull request; never a
merge. Modules: ``keys``, ``intent`` (pure), ``forge``, ``grant``, ``ledger``, ``tty``,
``dialog``, ``session``, ``run_flow``, ``publish_flow``, ``adapter``, ``receipt``,
``verify``. See ``design/operator.md``."""
