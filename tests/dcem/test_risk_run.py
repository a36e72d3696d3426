"""``python -m dcem run synthetic --fit ltt``: thresholds chosen by Learn-then-Test on the
tuning cases, recorded in the run's spec and cells, and named by the report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem.calibration.risk_control import RiskTarget
from dcem.cli import main
from dcem.store.database import Store
from dcem.synthetic.spec import SyntheticSpec

RUN = ["run", "synthetic", "--scenarios", "S1", "--seeds", "1", "--n-train", "3000", "--no-ablation", "--quiet"]


def test_an_ltt_run_stores_its_target_and_its_promise_and_the_report_names_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "ltt.duckdb")
    assert main([*RUN, "--fit", "ltt", "--risk", "system_risk", "--alpha", "0.3", "--db", db]) == 0
    run_id = capsys.readouterr().out.split()[1]
    with Store(db) as store:
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [run_id]).fetchone()[0])
        cell = store.load_cell(run_id, "S1", 0)
    assert spec["risk_target"]["risk"] == "system_risk" and spec["risk_target"]["alpha"] == 0.3
    fit = info["threshold_fit"]
    assert fit["method"] == "ltt" and fit["guaranteed"] and 0 < fit["cal_decided_share"] < 1
    assert fit["cal_rate"] <= 0.3 and "at most 0.3" in fit["statement"]
    assert cell.config.eps_safe == pytest.approx(fit["chosen_lambda"])  # the cell ran with the chosen setting
    assert main(["report", "--db", db]) == 0
    assert "Thresholds: Learn-then-Test on the tuning cases, system_risk at most 0.3" in capsys.readouterr().out
    assert main(["report", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["risk_target"]["alpha"] == 0.3


def test_eq1_runs_keep_their_run_ids_and_an_ltt_run_gets_its_own() -> None:
    assert SyntheticSpec().run_id() == "syn-70b6c021b61c"  # the id of the default grid before risk control
    assert SyntheticSpec(risk_target=RiskTarget()).run_id() != SyntheticSpec().run_id()
    assert SyntheticSpec(risk_target=RiskTarget(alpha=0.1)).run_id() != SyntheticSpec(risk_target=RiskTarget()).run_id()


@pytest.mark.parametrize("extra, needle", [
    (["--alpha", "0.3"], "--alpha sets the Learn-then-Test target: add --fit ltt"),
    (["--fit", "ltt", "--alpha", "0"], "alpha: must be a number strictly between 0 and 1"),
    (["--fit", "ltt", "--risk", "harmful_among_decided", "--fwer", "fixed_sequence"], "use bonferroni"),
])
def test_bad_risk_options_exit_2_with_one_line(extra: list[str], needle: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, *extra, "--db", str(tmp_path / "x.duckdb")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err
    assert not (tmp_path / "x.duckdb").exists()  # refused before the store is touched
