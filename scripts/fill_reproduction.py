"""Replace one generated block of REPRODUCTION.md with a command's output.

    python -m dcem report --from-export data/results/dcem_synthetic --markdown \
        | python scripts/fill_reproduction.py dcem-synthetic

Reads the block's new content from stdin and rewrites the file in place.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: the project's packages come first

from dcem.analysis.reproduction import replace_block  # noqa: E402

FILE = ROOT / "REPRODUCTION.md"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: fill_reproduction.py BLOCK_NAME < content\n")
        return 2
    FILE.write_text(replace_block(FILE.read_text(encoding="utf-8"), argv[0], sys.stdin.read()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
