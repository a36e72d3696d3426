"""``python -m dcem_clinical run --fit ltt``: a clinical cell's thresholds chosen by
Learn-then-Test on its CAL trajectories; the target is in the spec, eq. (1) run ids stay."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem.calibration.risk_control import RiskTarget
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.cli import main as clinical_main
from dcem_clinical.run import ClinicalSpec, run_clinical
from tests.dcem_clinical.clinical_fakes import oracle_backend


def _spec(target: RiskTarget | None) -> ClinicalSpec:
    return ClinicalSpec(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=24, n_test=8,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=3),
                        free_rounds=2, risk_target=target)


@pytest.mark.parametrize("alpha, guaranteed", [(0.5, True), (0.05, False)])
def test_an_ltt_cell_records_its_promise_and_runs_with_the_chosen_level(alpha: float, guaranteed: bool,
                                                                       tmp_path: Path) -> None:
    """System risk at most 0.5 passes on 24 CAL cases; at most 0.05 (a sixtieth of the
    largest loss) cannot be shown on 24 cases, so the cell escalates every case."""
    target = RiskTarget(risk="system_risk", alpha=alpha, delta=0.2)
    with Store(tmp_path / "c.duckdb") as store:
        backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=6, tag="b")]
        run_id = run_clinical(store, _spec(target), backends=backends).run_id
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [run_id]).fetchone()[0])
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
        cell = store.load_cell(run_id, "S1", 0)
        dcem = store.con.execute("SELECT count(*) FILTER (action = 'STOP_AND_ESCALATE'), count(*) FROM outcomes "
                                 "WHERE run_id = ? AND method = 'dcem'", [run_id]).fetchone()
    fit = info["threshold_fit"]
    assert fit["method"] == "ltt" and fit["n_cases"] == 24 and spec["risk_target"]["alpha"] == alpha
    assert fit["guaranteed"] is guaranteed
    if guaranteed:
        assert cell.config.eps_safe == pytest.approx(fit["chosen_lambda"]) and fit["cal_rate"] <= alpha
        assert 0 < fit["cal_decided_share"] < 1
    else:
        assert cell.config.eps_safe == 0.0 and "every case is escalated" in fit["statement"]
        assert dcem[0] == dcem[1] == 8  # every TEST case handed to a person


def test_eq1_clinical_runs_keep_their_ids() -> None:
    assert "risk_target" not in _spec(None).to_dict()
    assert _spec(None).run_id() != _spec(RiskTarget()).run_id()


@pytest.mark.parametrize("extra, needle", [
    (["--risk", "system_risk"], "--risk sets the Learn-then-Test target: add --fit ltt"),
    (["--fit", "ltt", "--alpha", "1"], "alpha: must be a number strictly between 0 and 1"),
])
def test_bad_risk_options_exit_2_before_any_model_loads(extra: list[str], needle: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "x.duckdb"
    assert clinical_main(["run", "--dataset", "ddxplus8", "--agents", "stat", "--db", str(db), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err and not db.exists()
