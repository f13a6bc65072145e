"""``factory batch``: many tasks at once on one machine (SPEC M-2).

:mod:`tasks` reads the tasks file, :mod:`journal` keeps what ran and how it ended (the
resume point), :mod:`local` runs tasks as supervised children under one overall cap and one
per provider login, :mod:`report` writes and verifies the batch report, :mod:`screen`
shows progress. The distributed engine (:mod:`factory.distributed`) produces the same
journal rows and the same report.
"""
