"""How long a training command waits for its torch base: transformers' GGUF reader against
the dequantized copy that training.base_cache keeps.

In one process, with an empty temporary cache: the GGUF read alone, the first
``load_base`` (the GGUF read plus writing the copy), then ``--repeats`` loads from the copy.
Prints one JSON line with the times and the ratio of a GGUF read to a cached load.  Run on a
quiet machine:

    .venv/bin/python benchmarks/base_load.py --model smollm2-135m --threads 1
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from runtime.registry import resolve
    from training.base_cache import TORCH_CACHE_ENV
    from training.base_model import _from_gguf, load_base, set_threads

    set_threads(args.threads)
    path = resolve(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[TORCH_CACHE_ENV] = tmp
        start = time.perf_counter()
        model = _from_gguf(path)
        gguf_s = time.perf_counter() - start
        del model
        start = time.perf_counter()
        load_base(path)
        first_s = time.perf_counter() - start
        cached = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            load_base(path)
            cached.append(time.perf_counter() - start)
        size_mb = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 2**20
    cached_s = statistics.median(cached)
    print(json.dumps({"model": args.model, "threads": args.threads, "gguf_mb": round(path.stat().st_size / 2**20, 1),
                      "copy_mb": round(size_mb, 1), "gguf_read_s": round(gguf_s, 2),
                      "first_load_s": round(first_s, 2), "cached_load_s": round(cached_s, 2),
                      "cached_loads_s": [round(c, 2) for c in cached],
                      "gguf_over_cached": round(gguf_s / cached_s, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
