"""``python -m sag eval`` and ``report --eval``: bad input, and a real run on SmolLM2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sag.store.eval_tables import eval_costs
from sag.store.tables import SagStore
from tests.cli_inprocess import run_main

ROOT = Path(__file__).resolve().parents[3]


def _sag(*args: str, db: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DCEM_DB": str(db)}
    return subprocess.run([sys.executable, "-m", "sag", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("args, message", [
    (["--groups", "single,sag-7"], "unknown group 'sag-7'"),
    (["--groups", "single,single"], "named twice"),
    (["--items", "0"], "items"),
    (["--suite", "speed"], "unknown suite or metric"),
    (["--groups", "vote-9"], "vote-N takes N in"),
    (["--executor", "spark"], "invalid choice: 'spark'"),
    (["--ray-address", "10.0.0.1:6379"], "a Ray address needs --executor ray"),
    (["--executor", "ray", "--workers", "0"], "--workers"),
])
def test_bad_eval_arguments_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = run_main("sag", ["eval", *args], env={"DCEM_DB": str(tmp_path / "x.duckdb")})
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and message in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "x.duckdb").exists() or not SagStore(tmp_path / "x.duckdb").runs().shape[0]


def test_report_eval_on_an_empty_store_says_what_to_do(tmp_path: Path) -> None:
    missing = run_main("sag", ["report", "--eval"], env={"DCEM_DB": str(tmp_path / "x.duckdb")})
    assert missing.returncode == 2 and "no store file" in missing.stderr and not (tmp_path / "x.duckdb").exists()
    SagStore(tmp_path / "x.duckdb").close()
    out = run_main("sag", ["report", "--eval"], env={"DCEM_DB": str(tmp_path / "x.duckdb")})
    assert out.returncode == 2 and "python -m sag eval" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_real_suite_on_smollm2_runs_scores_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "real.duckdb"
    args = ("eval", "--suite", "core", "--groups", "single", "--items", "1", "--consistency-items", "1",
            "--rationale-tokens", "8", "--threads", "1", "-q")
    first = _sag(*args, db=db)
    assert first.returncode == 0, first.stderr
    assert "single: 42 parts" in first.stdout and "incomplete" not in first.stdout
    with SagStore(db) as store:
        cost = eval_costs(store, "core-n1-c1")["single"]
    assert cost["peak_rss_mb"] > 50 and cost["weights"]["models"]["smollm2-135m"]["parameters"] > 100_000_000
    again = _sag(*args, db=db)
    assert again.returncode == 0 and "0 answered now; 0 model calls" in again.stdout
    export = tmp_path / "e.json"
    report = _sag("report", "--eval", "--export", str(export), db=db)
    assert report.returncode == 0, report.stderr
    data = json.loads(export.read_text(encoding="utf-8"))
    single = data["groups"]["single"]
    assert set(single["accuracy"]) == {"medqa", "medmcqa", "mmlu-medical", "mmlu-pro-health", "mmlu-pro-biology",
                                       "agentclinic"}
    assert single["deployment"]["flops_per_item"] > 0 and single["deployment"]["seconds_per_item"] > 0
    assert single["safety"]["roc"]["auc"] is not None and len(single["consistency"]["medqa"]["base"]["accuracies"]) == 5
    assert "| single |" in report.stdout and "## Table 6: deployment cost" in report.stdout
