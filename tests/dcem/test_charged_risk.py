"""Issue 51, item 5: system risk counts an escalated case as 0 (the seed's R_L^sys under an
expert backstop).  Beside it every report shows the risk with escalation charged at a
stated cost (``--escalation-cost``, default 0.5, the cost eq. 1's fit uses), and names
which is which."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from common.errors import InputError
from dcem.analysis.charged_risk import (CHARGED, DEFAULT_COST, charged_words, check_escalation_cost, named_for_text,
                                        with_charged_column, with_charged_metrics, with_charged_risk)
from dcem.analysis.report import comparison_table
from dcem.calibration.fitting import C_ESC
from dcem.cli import main as dcem_main
from dcem.store.run_export import load_run_export
from dcem_clinical.cli import main as clinical_main
from dcem_clinical.report.tables import table1, table6

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "data" / "results" / "dcem_clinical_views"
SYNTHETIC = ROOT / "data" / "results" / "dcem_synthetic"
DDX_RUN = "llm-ab12b25c83e1"  # the views export's DDXPlus-8 run


@pytest.fixture(scope="module")
def views() -> pd.DataFrame:
    export = load_run_export(VIEWS)
    metrics = export.metrics[export.metrics["run_id"] == DDX_RUN].drop(columns="run_id")
    return metrics.assign(dataset="ddxplus8")


def _mean(table: pd.DataFrame, scenario: str, method: str, metric: str) -> float:
    row = table[(table["scenario"].astype(str) == scenario) & (table["method"].astype(str) == method)
                & (table["metric"].astype(str) == metric)]
    assert len(row) == 1
    return float(row["mean"].iloc[0])


def test_the_default_cost_is_the_fits_escalation_cost() -> None:
    assert DEFAULT_COST == C_ESC == 0.5
    assert charged_words() == "Risk with escalation at 0.5"


def test_s3a_dcem_charged_at_the_projects_cost_is_above_single_best(views: pd.DataFrame) -> None:
    """The issue's numbers: escalation free, D-CEM's S3a system risk is half Single best's;
    charged at 0.5 per escalation it is 0.368 against 0.226."""
    t6 = table6(views)
    assert _mean(t6, "S3a", "dcem", "system_risk") == pytest.approx(0.116)
    assert _mean(t6, "S3a", "single", "system_risk") == pytest.approx(0.226)
    assert _mean(t6, "S3a", "dcem", CHARGED) == pytest.approx(0.368)
    assert _mean(t6, "S3a", "single", CHARGED) == pytest.approx(0.226)  # Single best never escalates
    assert _mean(table1(views), "S3a", "dcem", CHARGED) == pytest.approx(0.368)
    # another cost, another number: 0.116 + 0.25 * 0.504
    assert _mean(table6(views, escalation_cost=0.25), "S3a", "dcem", CHARGED) == pytest.approx(0.242)


def test_the_charged_risk_is_the_mean_over_cases_of_loss_or_cost() -> None:
    """Per cell, from the exported outcomes directly: a decided case costs its loss, an
    escalated one the cost."""
    export = load_run_export(VIEWS)
    outcomes = export.outcomes[export.outcomes["run_id"] == DDX_RUN]
    metrics = with_charged_risk(export.metrics[export.metrics["run_id"] == DDX_RUN], 0.7)
    esc = outcomes["action"] == "STOP_AND_ESCALATE"
    per_case = np.where(esc, 0.7, outcomes["loss"].astype(float))
    expected = outcomes.assign(c=per_case).groupby(["scenario", "seed", "method"])["c"].mean()
    got = metrics[metrics["metric"] == CHARGED].set_index(["scenario", "seed", "method"])["value"]
    assert len(got) == len(expected) == 4 * 5 * 5
    assert np.allclose(got.sort_index().to_numpy(), expected.sort_index().to_numpy())


def test_wide_and_dict_forms_put_the_charged_risk_right_after_the_system_risk() -> None:
    metrics = {"accuracy": 0.8, "system_risk": 0.1, "escalation_rate": 0.4}
    out = with_charged_metrics(metrics, 0.5)
    assert list(out) == ["accuracy", "system_risk", CHARGED, "escalation_rate"] and out[CHARGED] == pytest.approx(0.3)
    frame = pd.DataFrame({"scenario": ["S1"], "system_risk": [0.1], "escalation_rate": [0.4]})
    wide = with_charged_column(frame, 1.0)
    assert list(wide.columns) == ["scenario", "system_risk", CHARGED, "escalation_rate"]
    assert wide[CHARGED].iloc[0] == pytest.approx(0.5)
    assert list(with_charged_column(frame.drop(columns="escalation_rate")).columns) == ["scenario", "system_risk"]


def test_the_text_tables_name_both_risks_in_order() -> None:
    metrics = load_run_export(SYNTHETIC).metrics
    table = named_for_text(comparison_table(metrics[metrics["run_id"] == metrics["run_id"].iloc[0]]))
    order = list(table["metric"].cat.categories)
    free = order.index("system risk (escalation free)")
    assert order[free + 1] == "risk with escalation at 0.5"


@pytest.mark.parametrize("value", [-0.1, math.nan, math.inf, True, "0.5", 1001.0])
def test_a_cost_out_of_range_is_refused_naming_it(value: object) -> None:
    with pytest.raises(InputError) as info:
        check_escalation_cost(value)
    assert info.value.field == "escalation_cost"


def test_the_clinical_report_states_the_cost_it_charges(capsys: pytest.CaptureFixture[str]) -> None:
    assert clinical_main(["report", "--from-export", str(VIEWS), "--escalation-cost", "1"]) == 0
    text = capsys.readouterr().out
    assert "system risk (escalation free)" in text and "risk with escalation at 1 " in text
    assert clinical_main(["report", "--from-export", str(VIEWS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["escalation_cost"] == 0.5
    s3a = [r for r in report["table6"] if r["metric"] == CHARGED and r["scenario"] == "S3a"
           and r["dataset"] == "ddxplus8"]
    assert {r["method"]: round(r["mean"], 3) for r in s3a} == {"single": 0.226, "free": 0.526, "pool": 0.508,
                                                                "dcem": 0.368}
    assert clinical_main(["report", "--from-export", str(VIEWS), "--markdown", "--escalation-cost", "0.25"]) == 0
    assert "Beside it, the risk with escalation at 0.25" in capsys.readouterr().out
    assert clinical_main(["report", "--from-export", str(VIEWS), "--paired"]) == 0
    assert "| R_L^sys (escalation free) | risk with escalation at 0.5 |" in capsys.readouterr().out


def test_the_synthetic_report_states_the_cost_it_charges(capsys: pytest.CaptureFixture[str]) -> None:
    assert dcem_main(["report", "--from-export", str(SYNTHETIC), "--escalation-cost", "0.2"]) == 0
    text = capsys.readouterr().out
    assert "the risk with escalation at 0.2 charges it 0.2" in text and "system risk (escalation free)" in text
    assert dcem_main(["report", "--from-export", str(SYNTHETIC), "--markdown"]) == 0
    assert "Risk with escalation at 0.5 (each escalated case counts 0.5" in capsys.readouterr().out


@pytest.mark.parametrize("main", [dcem_main, clinical_main])
@pytest.mark.parametrize("bad", ["-1", "nan", "abc", "1e9"])
def test_a_bad_escalation_cost_exits_2_with_one_line(main, bad: str,  # type: ignore[no-untyped-def]
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    export = SYNTHETIC if main is dcem_main else VIEWS
    with pytest.raises(SystemExit) as info:
        main(["report", "--from-export", str(export), "--escalation-cost", bad])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--escalation-cost" in err and "must be a number from 0 to 1000" in err
