"""``python -m factory`` runs the console script."""

import sys

from factory.cli.main import main

sys.exit(main())
