"""``python -m sag``: see :mod:`sag.cli`."""
import sys

from sag.cli import main

sys.exit(main())
