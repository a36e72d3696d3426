"""A store written by the release before the package split opens, migrates and reads the same.

``tests/fixtures/store_before_split.duckdb`` was written by that release: a synthetic
run (``old-synthetic``), a clinical run of two scripted agents (``llm-979976750fdd``,
with its call log, agent turns and case texts), one review and one preset.  The two
``report_*.json`` files are ``python -m dcem report --json`` of each run (clinical reports
are now ``python -m dcem_clinical report``), printed by that
release.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from common.migrations import applied_migrations
from dcem.analysis.whatif import load_run_replay, rescore
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem.store.presets import load_preset
from dcem.store.reviews import review_history
from dcem_clinical.run import ClinicalSpec, run_clinical
from runtime.call_log import CallLog
from tests.dcem_clinical.clinical_fakes import oracle_backend

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CLINICAL_RUN = "llm-979976750fdd"


@pytest.fixture()
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.duckdb"
    shutil.copy(FIXTURES / "store_before_split.duckdb", path)
    return path


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def test_migrations_are_renamed_not_reapplied(old_store: Path) -> None:
    with Store(old_store) as store:
        CallLog(store)
        assert applied_migrations(store.con) == [
            "dcem/001_runs_cells_cases_traces_outcomes_metrics", "dcem/002_presets_reviews",
            "dcem/003_llm_traces_case_texts_agent_turns", "dcem/004_agent_turn_examples", "dcem/005_cell_failures",
            "ledger/001_ledger_runs_units", "runtime/001_llm_calls"]
        assert CallLog(store).count(CLINICAL_RUN) == 78


@pytest.mark.parametrize("run_id", ["old-synthetic", CLINICAL_RUN])
def test_report_is_what_the_old_release_printed(old_store: Path, run_id: str) -> None:
    command = "dcem" if run_id == "old-synthetic" else "dcem_clinical"  # clinical reports moved there
    out = subprocess.run([sys.executable, "-m", command, "report", "--db", str(old_store), "--run", run_id,
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before = json.loads((FIXTURES / f"report_{run_id}.json").read_text(encoding="utf-8"))
    now = json.loads(out.stdout)
    # added since (issue 51): the cost of an escalation and each method's risk charged with it
    assert now.pop("escalation_cost") == 0.5
    def charged(row: object) -> bool:
        return isinstance(row, dict) and row.get("metric") == "charged_risk"

    assert any(charged(r) for rows in now.values() if isinstance(rows, list) for r in rows)
    kept = {k: [r for r in rows if not charged(r)] if isinstance(rows, list) else rows for k, rows in now.items()}
    assert _close(kept, before)


def test_reviews_presets_and_rescoring_still_read(old_store: Path) -> None:
    with Store(old_store) as store:
        assert len(review_history(store, store.con.execute("SELECT run_id FROM reviews").fetchone()[0])) == 1
        config, _ = load_preset(store, "fixture-preset")
        assert (config.eps_safe, config.eps_low) == (0.4, 0.9)
        replay = load_run_replay(store, CLINICAL_RUN)
        assert all(cell.probabilities is not None for cell in replay.cells)  # scored on stored vectors
        stored = store.con.execute("SELECT avg(CASE WHEN decision = truth THEN 1.0 ELSE 0 END) FROM outcomes "
                                   "WHERE run_id = ? AND method = 'dcem' AND action = 'STOP_AND_DECIDE'",
                                   [CLINICAL_RUN]).fetchone()[0]
        again = rescore(replay).outcomes
        decided = again[again["action"] == "STOP_AND_DECIDE"]
        assert math.isclose(float((decided["decision"] == decided["truth"]).mean()), float(stored))


def test_the_same_clinical_command_resumes_the_old_run(old_store: Path) -> None:
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=8, n_test=4,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=3),
                        free_rounds=2)
    assert spec.run_id() == CLINICAL_RUN
    backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=6, tag="b")]
    with Store(old_store) as store:
        summary = run_clinical(store, spec, backends=backends)
    assert (summary.resumed, summary.computed, summary.complete) == (True, 0, True)
    assert all(not b.calls for b in backends)
