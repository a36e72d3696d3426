"""A small real clinical run with the packaged SmolLM2 (both agents), and over-long cases."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from clinical.ddxplus import LABELS
from dcem.core.config import MediatorConfig
from dcem.core.results import METHODS
from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.call_log import LoggedAgent, call_count
from dcem_clinical.panel import LlmPanel
from dcem_clinical.run import ClinicalSpec, make_backend, run_clinical

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python missing")]


def test_real_smollm2_clinical_run_and_cached_rerun(tmp_path: Path) -> None:
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=4, n_test=3,
                        agents=("smollm2-135m", "smollm2-135m"),
                        base_config=MediatorConfig(prior="empirical", t_max=2), free_rounds=1)
    with Store(tmp_path / "real.duckdb") as store:
        summary = run_clinical(store, spec, n_threads=1)
        assert summary.complete
        metrics = store.metrics(summary.run_id)
        assert set(metrics["method"]) == set(METHODS)
        dcem = metrics[metrics["method"] == "dcem"].set_index("metric")["value"]
        assert 1.0 <= dcem["avg_rounds"] <= 2.0 and dcem["parse_error_rate"] == 0.0
        probs = store.con.execute("SELECT probabilities FROM agent_turns WHERE run_id = ?",
                                  [summary.run_id]).fetchall()
        assert probs and all(abs(sum(p[0]) - 1.0) < 1e-9 for p in probs)
        # the two agents share one model but not their roles (S2: B is anchored)
        roles = store.con.execute("SELECT DISTINCT messages_json FROM llm_calls WHERE agent = 1").fetchall()
        assert any("walk-in clinic" in r[0] for r in roles)
        rows = call_count(store)
        assert rows > 0
        # the same settings under a new run id: every answer comes from the call log
        again = run_clinical(store, ClinicalSpec(**{**spec.__dict__, "n_ctx": 4096}), n_threads=1)
        assert again.complete and again.computed == 1 and call_count(store) == rows


def test_overlong_case_is_an_error_with_uniform_report_not_a_crash(tmp_path: Path) -> None:
    backend = make_backend("smollm2-135m", n_ctx=256, n_threads=1)
    with Store(tmp_path / "long.duckdb") as store:
        agent = LoggedAgent(DiagnosticAgent(backend, LABELS), store)
        long_text = "Cough and fever for three days. " * 80
        panel = LlmPanel([agent], ["c1", "c2"], [long_text, "Sore throat."], run_id="r")
        out = panel.report(1)
    assert np.allclose(out[0, 0], 1 / len(LABELS))
    assert panel.turns[0]["error"] is not None and "exceeds the context" in panel.turns[0]["error"]
    assert panel.turns[1]["error"] is None and abs(out[1, 0].sum() - 1) < 1e-9
