"""``python -m sag``: the Small Agent Group's command line is not built yet.

The commands this name used to run moved to ``python -m dcem_clinical``; each old
spelling prints a one-line pointer and exits with status 2.
"""
from __future__ import annotations

import sys
from typing import Sequence

MOVED = {
    "run": "python -m dcem_clinical run",
    "models": "python -m dcem_clinical models",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else ""
    target = MOVED.get(command)
    if target is not None:
        rest = [a for a in args[1:] if a != "clinical"] if command == "run" else args[1:]
        print(f"moved: the clinical experiment now runs as `{target}{' ' if rest else ''}{' '.join(rest)}`",
              file=sys.stderr)
    else:
        print("python -m sag: the Small Agent Group's commands are not available yet; the D-CEM clinical "
              "experiment runs as `python -m dcem_clinical run`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
