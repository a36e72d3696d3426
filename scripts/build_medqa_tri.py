"""Build the shipped MedQA-Tri file from the MedQA-USMLE source (keyword mapping only).

Usage (from the repository root)::

    .venv/bin/python scripts/build_medqa_tri.py
    .venv/bin/python scripts/build_medqa_tri.py --source data/medqa/medqa_us_4opt_test.jsonl \\
        --out data/medqa_tri/medqa_tri.jsonl --report data/medqa_tri/build_report.json

No LLM is available at build time, so no fallback is passed: items the keyword heuristic
skips are dropped.  The output is deterministic (no randomness).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from clinical.medqa_tri import build_medqa_tri, write_medqa_tri  # noqa: E402

__all__ = ["main"]

log = logging.getLogger("build_medqa_tri")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "data" / "medqa" / "medqa_us_4opt_test.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "medqa_tri" / "medqa_tri.jsonl")
    parser.add_argument("--report", type=Path, default=None,
                        help="optional path for the stage/per-class counts as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    items, report = build_medqa_tri(args.source)
    write_medqa_tri(items, args.out)
    log.info("wrote %d items to %s", len(items), args.out)
    for key, value in report.as_dict().items():
        log.info("%s: %s", key, value)
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
