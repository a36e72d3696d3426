"""Print the accuracy table of docs/clinical_members.md ("Measured on seed 0's split"): every
statistical member's row refit from the data (no model runs), and the trained
diagnostician's symptoms view from the shipped trio export.  Its whole-case, complaint and
history entries need model runs: run it on those views, export the run, and pass the
export with --llm-export to print them too.

    .venv/bin/python scripts/member_accuracy.py
    .venv/bin/python scripts/member_accuracy.py --llm-export <folder of a dcem_clinical export>
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEADER = ("| dataset, model | CAL / TEST | all | partial views | one right |\n"
          "|---|---|---|---|---|")
LLM = "`smollm2-135m+lora:ddxplus8-grpo` (trained on whole cases)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trio", type=Path, default=ROOT / "data" / "results" / "dcem_clinical_trio")
    parser.add_argument("--llm-export", type=Path, help="an export whose S1 seed-0 cell holds the diagnostician on "
                                                        "other views (round 1, 100 / 100)")
    args = parser.parse_args()

    from dcem_clinical.member_accuracy import stat_accuracy, table_row, trio_member_accuracy

    print(HEADER)
    stat = {}
    for dataset, name, kind, n_cal, n_test, views, pair in [
        ("ddxplus8", "DDXPlus-8", "nb-evidence", 80, 160, ("all", "complaint", "history", "symptoms"), ("complaint", "history")),
        ("ddxplus8", "DDXPlus-8", "nb-evidence", 100, 100, ("all", "complaint", "history", "symptoms"), ("complaint", "history")),
        ("ddxplus8", "DDXPlus-8", "lr-evidence", 100, 100, ("all", "complaint", "history"), ("complaint", "history")),
    ]:
        got = {v: stat_accuracy(dataset, kind, v, n_cal, n_test) for v in views}
        stat[(kind, n_cal)] = got
        print(table_row(f"{name}, {kind}", n_cal, n_test, list(got.values()),
                        [(" + ".join(pair), got[pair[0]], got[pair[1]])]), flush=True)
    llm = [trio_member_accuracy(args.trio, 2, 100)]
    if args.llm_export:
        info = json.loads(__import__("pandas").read_parquet(args.llm_export / "cells.parquet")["info_json"].iloc[0])
        llm += [trio_member_accuracy(args.llm_export, a, 100) for a in range(len(info["agents"]))]
    by_view = {v.view: v for v in llm}
    nb = stat[("nb-evidence", 100)]
    symptoms = by_view["symptoms"]
    print(table_row(f"DDXPlus-8, {LLM}", 100, 100, [by_view[v] for v in ("all", "complaint", "history", "symptoms")
                                                    if v in by_view],
                    [("its symptoms + nb-evidence complaint", symptoms, nb["complaint"]),
                     ("its symptoms + nb-evidence history", symptoms, nb["history"])]), flush=True)
    for n_cal, n_test in ((70, 140), (100, 100)):
        got = {v: stat_accuracy("medqa-tri", "tfidf-lr", v, n_cal, n_test)
               for v in ("all", "history", "findings", "vignette", "answer")}
        print(table_row("MedQA-Tri, tfidf-lr", n_cal, n_test, list(got.values()),
                        [("history + findings", got["history"], got["findings"])]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
