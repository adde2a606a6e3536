"""``python -m auditor`` runs the ``ddb-audit`` CLI."""

import sys

from auditor.cli import main

sys.exit(main())
