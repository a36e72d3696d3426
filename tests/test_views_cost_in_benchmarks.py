"""BENCHMARKS.md's table of the second view group's cost is the last line of
benchmarks/results/views_cost.jsonl: seconds per item, the ratio and its goal."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_second_groups_cost_table_is_its_json_line() -> None:
    line = json.loads((ROOT / "benchmarks/results/views_cost.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert line["group"] == "ddx-views2-trained.json" and line["outputs_identical"]
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    section = text.split("## The second view group against one single answer", 1)[1].split("\n## ", 1)[0]
    assert len(line["runs_group"]) == len(line["runs_single"]) == 2  # the means below are of the two repeats
    runs_g = ", ".join(f"{x:.2f}" for x in line["runs_group"])
    runs_s = ", ".join(f"{x:.2f}" for x in line["runs_single"])
    assert f"| group, seconds per item | {sum(line['runs_group']) / 2:.2f} (runs: {runs_g}) |" in section
    assert f"| one single answer, seconds per item | {sum(line['runs_single']) / 2:.2f} (runs: {runs_s}) |" in section
    per_repeat = [g / s for g, s in zip(line["runs_group"], line["runs_single"])]
    assert f"**{line['seconds_ratio']:.1f}x** (per repeat {per_repeat[0]:.1f}x and {per_repeat[1]:.1f}x" in section
    assert line["goal_met"] and line["seconds_ratio"] <= line["goal_ratio"] and "met)" in section
    assert f"({line['unparked_seconds_per_item']:.2f} s, {line['unparked_ratio']:.1f}x)" in section
