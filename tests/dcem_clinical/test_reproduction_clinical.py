"""REPRODUCTION.md's clinical blocks are the markdown of the shipped run exports.

Each export lives in ``data/results/<name>/`` (``python -m dcem_clinical export``); its
block between ``<!-- <block>:begin -->`` and ``<!-- <block>:end -->`` is
``python -m dcem_clinical report --from-export data/results/<name> --markdown``, and its agents
tables hold the numbers the export's Parquet files give directly.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import duckdb
import pytest

from dcem_clinical.report.agents import export_agent_rows
from dcem_clinical.report.markdown import AGENTS_TITLE, render_clinical_markdown
from dcem.analysis.reproduction import reproduction_block
from dcem.analysis.export_metrics import metric_mismatches
from dcem_clinical.cli import main as clinical_main
from dcem.store.run_export import load_run_export

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "data" / "results"
# (export directory, REPRODUCTION block) of every shipped clinical export
SHIPPED = [(RESULTS / "dcem_clinical", "dcem-clinical"), (RESULTS / "dcem_clinical_mixed", "dcem-clinical-mixed"),
           (RESULTS / "dcem_clinical_pair", "dcem-clinical-pair"), (RESULTS / "dcem_clinical_views", "dcem-clinical-views"),
           (RESULTS / "dcem_clinical_trio", "dcem-clinical-trio"),
           (RESULTS / "own_cases_abdominal", "dcem-clinical-own-cases")]


@pytest.mark.parametrize("export_dir, block_name", SHIPPED)
def test_reproduction_prints_the_tables_of_the_shipped_clinical_export(export_dir: Path, block_name: str) -> None:
    assert (export_dir / "manifest.json").exists(), (
        f"a shipped clinical run export is missing: {export_dir.relative_to(ROOT)}/manifest.json "
        f"(make it with python -m dcem_clinical export --run ... --out {export_dir.relative_to(ROOT)} --command ...)")
    export = load_run_export(export_dir)
    assert metric_mismatches(export).empty
    block = reproduction_block((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8"), block_name)
    assert block.strip() == render_clinical_markdown(export.metrics, export.manifest,
                                                     agents=export_agent_rows(export)).strip()


def _parquet(export_dir: Path, name: str) -> list[dict[str, object]]:
    con = duckdb.connect()
    try:
        frame = con.execute("SELECT * FROM read_parquet(?)", [str(export_dir / f"{name}.parquet")]).df()
    finally:
        con.close()
    return frame.to_dict("records")


def _cell_text(values: list[float]) -> str:
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.2f}"
    std = f"{statistics.pstdev(values):.2f}"
    return f"{mean:.2f} ± {std[1:] if std.startswith('0.') else std}"


def _split_counts(export_dir: Path) -> dict[tuple[object, ...], list[int]]:
    """(run, scenario, seed, agent) -> [split cases, cases D-CEM decided with the agent's label]."""
    outcome = {(o["run_id"], o["case_id"]): o for o in _parquet(export_dir, "outcomes") if o["method"] == "dcem"}
    counts: dict[tuple[object, ...], list[int]] = {}
    for t in _parquet(export_dir, "traces"):
        o = outcome.get((t["run_id"], t["case_id"]))
        if t["method"] != "dcem" or o is None or t["round"] != o["rounds"] or len(set(t["reports"])) < 2:
            continue
        for a, label in enumerate(t["reports"]):
            c = counts.setdefault((t["run_id"], o["scenario"], o["seed"], a), [0, 0])
            c[0] += 1
            c[1] += int(label == o["decision"])
    return counts


def _sided(split: list[int]) -> str:
    return f"{split[1]} of {split[0]}" if split[0] else "—"


def _expected_rows(export_dir: Path) -> dict[str, list[str]]:
    """dataset -> the agents table's rows, computed from the Parquet files and the manifest."""
    runs = {r["run_id"]: r["spec"] for r in json.loads((export_dir / "manifest.json").read_text("utf-8"))["runs"]}
    truth = {(c["run_id"], c["case_id"]): (c["scenario"], c["seed"], c["truth"])
             for c in _parquet(export_dir, "cases")}
    right: dict[tuple[object, ...], list[bool]] = {}
    for t in _parquet(export_dir, "turns"):
        if t["method"] == "dcem" and t["round"] == 1:
            scenario, seed, answer = truth[(t["run_id"], t["case_id"])]
            label = t["label"]
            ok = label is not None and label == label and int(label) == int(answer)  # NaN / None: a failed call
            right.setdefault((t["run_id"], scenario, seed, t["agent"]), []).append(ok)
    per: dict[tuple[str, int], dict[str, list]] = {}
    split = _split_counts(export_dir)
    for cell in _parquet(export_dir, "cells"):
        info, spec = json.loads(cell["info_json"]), runs[cell["run_id"]]
        for a, entry in enumerate(info["agents"]):
            acc = per.setdefault((spec["dataset"], a), {"name": [], "model": [], "cal": [], "test": [], "best": [],
                                                        "split": [0, 0]})
            acc["name"].append(entry["name"])
            acc["model"].append(entry["model"] if entry.get("backend") == "stat" else spec["agents"][a])
            cases, sided = split.get((cell["run_id"], cell["scenario"], cell["seed"], a), [0, 0])
            acc["split"] = [acc["split"][0] + cases, acc["split"][1] + sided]
            acc["cal"].append(info["calibration_accuracy"][a])
            turns = right[(cell["run_id"], cell["scenario"], cell["seed"], a)]
            acc["test"].append(sum(turns) / len(turns))
            acc["best"].append(info["best_agent"] == a)
    out: dict[str, list[str]] = {}
    for (dataset, a), acc in sorted(per.items()):
        assert len(set(acc["name"])) == 1 and len(set(acc["model"])) == 1
        out.setdefault(dataset, []).append(
            f"| {'ABCDEFGH'[a]} | {acc['name'][0]} | {acc['model'][0]} | {_cell_text(acc['cal'])} | "
            f"{_cell_text(acc['test'])} | {sum(acc['best'])} of {len(acc['best'])} | {_sided(acc['split'])} |")
    return out


@pytest.mark.parametrize("export_dir, block_name", SHIPPED)
def test_the_agents_tables_of_the_shipped_export_hold_the_numbers_of_its_parquet_files(
        capsys: pytest.CaptureFixture[str], export_dir: Path, block_name: str) -> None:
    expected = _expected_rows(export_dir)
    assert expected and all(d in {"ddxplus8", "medqa-tri"} or d.startswith("file:") for d in expected)
    assert clinical_main(["report", "--from-export", str(export_dir), "--markdown"]) == 0
    printed = capsys.readouterr().out
    block = reproduction_block((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8"), block_name)
    for text in (printed, block):
        assert text.count(AGENTS_TITLE) == len(expected)
        for dataset, rows in expected.items():
            part = text.split(f"(`{dataset}`)", 1)[1].split("#### ", 1)[0]
            table = part.split(AGENTS_TITLE, 1)[1].split("| CAL-best |", 1)[1]
            assert [ln for ln in table.strip().splitlines()[1:] if ln.startswith("| ")] == rows, dataset
