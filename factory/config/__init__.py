"""``factory.toml``: repeated flags written once (issue 28, "a config file for repeated flags").

* :mod:`factory.config.table` — the one table: each config key, the argparse dest it feeds,
  the commands that have that dest, and whether a repository's file may set it;
* :mod:`factory.config.load` — reading one file (regular, UTF-8, TOML, no secrets) into the
  strict schema derived from the table;
* :mod:`factory.config.resolve` — precedence (flag > repository file > user file > built-in
  default) with the provenance of every value;
* :mod:`factory.config.report` — the published ``factory.config-show/1`` document.

The CLI applies it once, in :func:`factory.cli.config_apply.parse_with_config`. See
``design/config.md`` for the trust boundary (what a repository's file may not set).
"""
