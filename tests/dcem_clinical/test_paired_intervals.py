"""D-CEM against each baseline with paired bootstrap intervals over TEST cases."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dcem_clinical.report.paired import case_quantities, paired_differences
from dcem.analysis.reproduction import reproduction_block

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "data" / "results"
# (shipped clinical export, its REPRODUCTION block of paired intervals)
PAIRED = [(RESULTS / "dcem_clinical_views", "dcem-clinical-views-paired"),
          (RESULTS / "dcem_clinical_trio", "dcem-clinical-trio-paired"),
          (RESULTS / "own_cases_abdominal", "dcem-clinical-own-cases-paired")]


def _outcomes() -> pd.DataFrame:
    rows = []
    for case in range(40):
        truth = case % 2
        rows.append(("S1", 0, f"c{case}", "dcem", "STOP_AND_ESCALATE" if case < 10 else "STOP_AND_DECIDE",
                     truth, truth, 0.0))
        wrong = 1 - truth if case < 20 else truth
        rows.append(("S1", 0, f"c{case}", "single", "STOP_AND_DECIDE", wrong, truth, 5.0 if wrong != truth else 0.0))
    return pd.DataFrame(rows, columns=["scenario", "seed", "case_id", "method", "action", "decision", "truth", "loss"])


def test_differences_are_paired_by_case_and_their_interval_covers_them() -> None:
    q = case_quantities(_outcomes(), high_risk=[0])
    dcem = q[q["method"] == "dcem"]
    assert dcem["system_risk"].sum() == 0 and dcem["escalation"].sum() == 10
    table = paired_differences(q, np.random.default_rng(0), n_boot=500).set_index(["baseline", "quantity"])
    risk = table.loc[("single", "system_risk")]
    assert risk["difference"] == -0.5 * 5.0 and risk["low"] <= risk["difference"] <= risk["high"]
    assert table.loc[("single", "accuracy"), "difference"] == 0.5
    assert table.loc[("single", "harmful_consensus"), "difference"] == -0.25  # wrong on truth 0, cases 0-19
    assert table.loc[("single", "escalation"), "difference"] == 0.25 and risk["n"] == 40


@pytest.mark.parametrize("export_dir, block", PAIRED, ids=[b for _, b in PAIRED])
def test_the_shipped_grids_blocks_are_what_the_command_prints(export_dir: Path, block: str) -> None:
    out = subprocess.run([sys.executable, "-m", "dcem_clinical", "report", "--from-export", str(export_dir), "--paired"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert reproduction_block(text, block) == out.stdout.strip("\n")


def test_paired_needs_a_clinical_export() -> None:
    for extra, needle in (([], "--paired prints from a run export"),
                          (["--from-export", str(ROOT / "data" / "results" / "dcem_synthetic")], "holds synthetic runs")):
        out = subprocess.run([sys.executable, "-m", "dcem_clinical", "report", "--paired", *extra], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr
