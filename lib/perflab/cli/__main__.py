"""``python -m perflab.cli`` runs the package as a program."""

import sys

from . import main

sys.exit(main())
