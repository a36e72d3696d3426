"""A 200-case file through ``python -m dcem_clinical run`` with each kind of member, timed
in one process, and what D-CEM does there beside the baselines.

Run with ``.venv/bin/python benchmarks/case_file_members.py [--kinds stat,views,llm,llm-view]
[--threads 2] [--json benchmarks/results/case_file_members.jsonl]``.

The file is the first 200 cases of ``data/examples/abdominal_pain_cases.jsonl`` (five
classes; Appendicitis and Ectopic_pregnancy high-risk, l_high 5), so each seed draws
66 CAL and 134 TEST cases.  Each member kind plays one seed of S1 with the paper's
protocol (T = 6, six rounds of free discussion) on a fresh store (no call log: every turn
reaches its member), one kind after another:

- ``stat``: two TF-IDF + logistic regression members reading the whole case;
- ``views``: the same two reading the ``history`` and the ``exam`` view;
- ``llm``: SmolLM2-135M (whole case) beside a TF-IDF member;
- ``llm-view``: SmolLM2-135M reading ``history`` beside a TF-IDF member reading ``exam``;
- ``fleet``: SmolLM2-135M on two local ``llama_cpp.server`` processes (an ``openai:`` key
  with two URLs, one thread each) beside a TF-IDF member.

Prints, per kind, the wall seconds, seconds per case and the ratio to ``stat``, then each
kind's TEST accuracy per method beside chance and the most frequent class, its lowest
recall and its most frequent answer (:mod:`dcem_clinical.report.beside_chance`), and one
JSON line.  Machine-dependent: record the machine with the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clinical.case_file import CaseFileOptions, read_case_file  # noqa: E402
from clinical.datasets import use_dataset  # noqa: E402
from dcem.store.database import Store  # noqa: E402
from dcem_clinical.case_lengths import check_case_lengths  # noqa: E402
from dcem_clinical.report.beside_chance import beside_chance  # noqa: E402
from dcem_clinical.run import ClinicalSpec, run_clinical  # noqa: E402

KINDS = {"stat": ("stat:tfidf-lr", "stat:tfidf-lr"),
         "views": ("stat:tfidf-lr@history", "stat:tfidf-lr@exam"),
         "llm": ("smollm2-135m", "stat:tfidf-lr"),
         "llm-view": ("smollm2-135m@history", "stat:tfidf-lr@exam"),
         "fleet": ("openai:SERVERS#smollm2", "stat:tfidf-lr")}
HIGH = ("Appendicitis", "Ectopic_pregnancy")


def _file(folder: Path, n: int) -> Path:
    path = folder / f"abdominal_{n}.jsonl"
    lines = (ROOT / "data" / "examples" / "abdominal_pain_cases.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _play(kind: str, name: str, folder: Path, threads: int) -> dict[str, Any]:
    if kind == "fleet":
        from tests.runtime.llama_servers import start_servers, stop_servers

        servers = start_servers(folder, 2, threads=1)
        try:
            KINDS[kind] = (f"openai:{','.join(s.url for s in servers)}#smollm2", "stat:tfidf-lr")
            return _played(kind, ClinicalSpec(dataset=name, scenarios=("S1",), seeds=(0,), agents=KINDS[kind]),
                           folder, threads)
        finally:
            stop_servers(servers)
    return _played(kind, ClinicalSpec(dataset=name, scenarios=("S1",), seeds=(0,), agents=KINDS[kind]), folder, threads)


def _played(kind: str, spec: ClinicalSpec, folder: Path, threads: int) -> dict[str, Any]:
    store_path = folder / f"{kind}.duckdb"
    start = time.perf_counter()
    with Store(store_path) as store:
        summary = run_clinical(store, spec, n_threads=threads)
        seconds = time.perf_counter() - start
        outcomes = store.outcomes(summary.run_id)
        labels = store.load_cell(summary.run_id, "S1", 0).panel.labels
    cases = int(outcomes[outcomes["method"] == "dcem"].shape[0])
    table = beside_chance(outcomes, labels)
    return {"kind": kind, "members": list(KINDS[kind]), "seconds": seconds, "test_cases": cases,
            "run_id": summary.run_id, "beside_chance": table.to_dict(orient="records")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default="stat,views,llm,llm-view")
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ds = use_dataset(read_case_file(_file(folder, args.cases), CaseFileOptions(high_risk=HIGH)))
        n_cal, n_test = ds.default_sizes
        results = []
        for kind in kinds:
            if kind != "fleet":
                check_case_lengths(ds, KINDS[kind], ("S1",), ClinicalSpec().n_ctx)
            results.append(_play(kind, ds.name, folder, args.threads))
            print(f"{kind}: {results[-1]['seconds']:.1f} s", flush=True)
    base = next((r["seconds"] for r in results if r["kind"] == "stat"), None)
    print(f"\n{len(ds.cases)} cases ({n_cal} CAL + {n_test} TEST, one seed, S1, T = 6); {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, --threads {args.threads}\n")
    print("| members | seconds | s per case | vs stat |\n|---|---|---|---|")
    for r in results:
        ratio = f"{r['seconds'] / base:.1f}x" if base else "-"
        print(f"| {' + '.join(r['members'])} | {r['seconds']:.1f} | {r['seconds'] / len(ds.cases):.2f} | {ratio} |")
    for r in results:
        print(f"\n{' + '.join(r['members'])}:\n")
        print("| method | accuracy | chance | most frequent class | top answer | lowest recall |\n|---|---|---|---|---|---|")
        for row in r["beside_chance"]:
            print(f"| {row['method']} | {row['accuracy']} | {row['chance']} | {row['most frequent class']} | "
                  f"{row['top answer']} | {row['lowest recall']} |")
    line = json.dumps({"benchmark": "case_file_members", "cases": len(ds.cases), "n_cal": n_cal, "n_test": n_test, "threads": args.threads,
                       "results": results})
    print("\n" + line)
    if args.json:  # one JSON line per run, appended (benchmarks/results/*.jsonl)
        with open(args.json, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


if __name__ == "__main__":
    main()
