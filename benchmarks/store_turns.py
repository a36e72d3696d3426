"""Lost writes when processes take turns on one DuckDB file: DuckDB's lock alone against
the project's lock file (``common.file_hold``), in one run.

Each round makes a fresh file with one table; ``--writers`` processes then each insert
``--rows`` rows, opening the file, inserting one row in a transaction and closing it
again for every row, and retrying while another process holds the file.  A round is bad
when, afterwards, the table holds fewer rows than were inserted (no process saw an
error).  ``--burners`` busy-loop processes load the cores meanwhile, as a shared machine
does.  Two modes, one after the other:

* ``duckdb``: ``duckdb.connect`` directly (DuckDB's own lock only);
* ``held``: ``common.db.open_held`` (the lock file, released after DuckDB's close).

Prints one JSON line per mode (rounds, bad rounds, rows lost, busy retries, seconds);
append them to benchmarks/results/store_turns.jsonl:

    .venv/bin/python benchmarks/store_turns.py --rounds 40
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _open(path: str, mode: str) -> tuple[Any, Any] | None:
    """A connection (and its lock-file share) or None while another process holds the file."""
    import duckdb

    from common.db import StoreBusyError, open_held

    if mode == "held":
        try:
            return open_held(Path(path), read_only=False)
        except StoreBusyError:
            return None
    try:
        return duckdb.connect(path), None
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            return None
        raise


def _writer(path: str, mode: str, who: int, rows: int, start: Any, out: Any) -> None:
    start.wait()
    busy = 0
    for i in range(rows):
        while (opened := _open(path, mode)) is None:
            busy += 1
            time.sleep(random.uniform(0.005, 0.01))
        con, held = opened
        con.execute("BEGIN")
        con.execute("INSERT INTO t VALUES (?, ?)", [who, i])
        con.execute("COMMIT")
        con.close()
        if held is not None:
            held.release()
    out.put(busy)


def _burn() -> None:
    while True:
        pass


def _round(ctx: Any, path: str, mode: str, writers: int, rows: int) -> tuple[int, int]:
    import duckdb

    con = duckdb.connect(path)
    con.execute("CREATE TABLE t (who INTEGER, i INTEGER)")
    con.close()
    start, out = ctx.Barrier(writers), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, mode, w, rows, start, out)) for w in range(writers)]
    for p in procs:
        p.start()
    busy = sum(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    con = duckdb.connect(path, read_only=True)
    stored = con.execute("SELECT count(*) FROM t").fetchone()[0]
    con.close()
    return writers * rows - stored, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--burners", type=int, default=2)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    burners = [ctx.Process(target=_burn, daemon=True) for _ in range(args.burners)]
    for b in burners:
        b.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for mode in ("duckdb", "held"):
                began, lost, bad, busy = time.monotonic(), 0, 0, 0
                for r in range(args.rounds):
                    missing, retries = _round(ctx, str(Path(tmp) / f"{mode}{r}.duckdb"), mode, args.writers, args.rows)
                    lost, bad, busy = lost + missing, bad + (missing > 0), busy + retries
                print(json.dumps({"benchmark": "store_turns", "mode": mode, "rounds": args.rounds,
                                  "writers": args.writers, "rows_per_writer": args.rows, "burners": args.burners,
                                  "bad_rounds": bad, "rows_lost": lost, "rows_written": args.rounds * args.writers
                                  * args.rows, "busy_retries": busy,
                                  "seconds": round(time.monotonic() - began, 1)}), flush=True)
    finally:
        for b in burners:
            b.terminate()


if __name__ == "__main__":
    main()
