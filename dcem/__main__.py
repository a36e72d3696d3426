"""``python -m dcem``: see :mod:`dcem.cli`."""
import sys

from dcem.cli import main

if __name__ == "__main__":
    sys.exit(main())
