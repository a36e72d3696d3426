"""A mixed panel of three with the packaged SmolLM2: the statistical agent beside two LLM members
(one real run covers both a mixed panel and N > 2; tests/dcem_clinical/test_stat_agent.py
covers the panels with scripted models)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from dcem.core.config import MediatorConfig
from dcem.core.results import METHODS
from dcem.store.database import Store
from dcem_clinical.run import ClinicalSpec, run_clinical

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python missing")]


def _spec(agents: tuple[str, ...], n_test: int) -> ClinicalSpec:
    return ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=3, n_test=n_test, agents=agents,
                        base_config=MediatorConfig(prior="empirical", t_max=2), free_rounds=1)


@pytest.mark.parametrize("agents, n_test", [(("stat", "smollm2-135m", "smollm2-135m"), 2)])
def test_stat_with_smollm2_panel_completes_and_stores_every_agent(agents: tuple[str, ...], n_test: int,
                                                                   tmp_path: Path) -> None:
    with Store(tmp_path / "mixed.duckdb") as store:
        summary = run_clinical(store, _spec(agents, n_test), n_threads=1)
        assert summary.complete
        run = summary.run_id
        assert set(store.metrics(run)["method"]) == set(METHODS)
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [run]).fetchone()[0])
        assert [a["model"].startswith("stat:") for a in info["agents"]] == [True] + [False] * (len(agents) - 1)
        turns = store.con.execute("SELECT agent, count(*) FROM agent_turns WHERE run_id = ? AND method = 'dcem' "
                                  "AND round = 1 GROUP BY agent ORDER BY agent", [run]).fetchall()
        assert turns == [(a, n_test) for a in range(len(agents))]
        reports = store.con.execute("SELECT reports FROM traces WHERE run_id = ? AND method = 'dcem'",
                                    [run]).fetchall()
        assert reports and all(len(r[0]) == len(agents) for r in reports)
