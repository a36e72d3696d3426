"""Does llama.cpp run the shipped diagnostician adapter as torch does?  Measures it on the
first held-out DDXPlus-8 cases (:func:`dcem_clinical.adapter_agreement.measure_agreement`)
and, with ``--write``, records each measurement in ``data/results/training/agreement.json``
(replacing an earlier one of the same adapter and number of items), the record the docs'
figures are checked against (``tests/training/test_agreement_record.py``):

    .venv/bin/python benchmarks/adapter_agreement.py --name ddxplus8-grpo --items 12 50 --threads 1 --write

The letters and log-probabilities depend on the llama.cpp build and the thread count a
little (floating-point sums), not on the machine's load.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default="ddxplus8-grpo", help="a shipped diagnostician export")
    parser.add_argument("--items", type=int, nargs="+", default=[12, 50])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="record the measurements")
    args = parser.parse_args()

    from dcem_clinical.adapter_agreement import measure_agreement
    from training.agreement import RECORD_NAME
    from training.shipped import exports_dir

    record = exports_dir() / RECORD_NAME
    rows = json.loads(record.read_text(encoding="utf-8"))["measurements"] if record.is_file() else []
    for items in args.items:
        got = measure_agreement(args.name, items, threads=args.threads)
        got |= {"threads": args.threads, "measured_on": dt.date.today().isoformat(),
                "command": f"python benchmarks/adapter_agreement.py --name {args.name} --items {items} "
                           f"--threads {args.threads} --write"}
        print(json.dumps(got), flush=True)
        rows = [r for r in rows if (r["adapter"], r["items"]) != (args.name, items)] + [got]
    if args.write:
        rows.sort(key=lambda r: (r["adapter"], r["items"]))
        record.write_text(json.dumps({"format": "adapter-agreement/1", "measurements": rows}, indent=1) + "\n",
                          encoding="utf-8")
        print(f"recorded in {record.relative_to(exports_dir().parents[2])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
