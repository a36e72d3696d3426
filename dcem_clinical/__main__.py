"""``python -m dcem_clinical``: see :mod:`dcem_clinical.cli`."""
import sys

from dcem_clinical.cli import main

sys.exit(main())
