"""``python -m studio runs ...``: see :mod:`studio.runs_cli`."""
from __future__ import annotations

import sys

from studio.runs_cli import main

if __name__ == "__main__":
    sys.exit(main())
