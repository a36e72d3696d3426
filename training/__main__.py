"""``python -m training export``: a finished training run as a compact export (its adapter
in ``data/adapters/`` and its record as manifest + Parquet; see :mod:`training.export`)."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from common.errors import ProjectError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export", help="export a finished training run: its adapter and its record")
    p.add_argument("--run", required=True, help="the training run's id")
    p.add_argument("--name", required=True, help="the adapter's name (data/adapters/<name>.gguf)")
    p.add_argument("--out", default=None, help="export folder (default: data/results/training/<name>)")
    p.add_argument("--adapters", default=None, help="adapters folder (default: data/adapters)")
    p.add_argument("--command", default=None, help="the commands that made the run (kept in the manifest)")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    r = sub.add_parser("report", help="a shipped training export as Markdown (run, held-out before/after)")
    r.add_argument("--name", required=True, help="the export's name (data/results/training/<name>)")
    args = parser.parse_args(argv)
    if args.command == "report":
        from training.report import export_markdown
        from training.shipped import read_shipped

        try:
            print(export_markdown(read_shipped(args.name)), end="")
        except ProjectError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    from common.db import PROJECT_ROOT
    from training.export import write_training_export
    from training.store import TrainingStore

    out = Path(args.out) if args.out else PROJECT_ROOT / "data" / "results" / "training" / args.name
    adapters = Path(args.adapters) if args.adapters else PROJECT_ROOT / "data" / "adapters"
    command = args.command or "python -m training " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    try:
        with TrainingStore(args.db, read_only=True, create=False) as store:
            manifest = write_training_export(store, args.run, out, adapters, args.name, command=command)
    except ProjectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    made = json.loads(manifest.read_text(encoding="utf-8"))
    files = [a["file"] for a in made.get("adapters", [])] or [made["adapter"]["file"]]
    print(f"wrote {manifest} and {', '.join(str(adapters / f) for f in files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
