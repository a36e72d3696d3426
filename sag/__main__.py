"""``python -m sag``: see :mod:`sag.cli`."""
from __future__ import annotations

import sys

from sag.cli import main

if __name__ == "__main__":
    sys.exit(main())
