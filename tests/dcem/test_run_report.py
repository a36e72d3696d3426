"""The synthetic run report as a library function: the same text ``python -m dcem report``
prints, and one-line errors for an unknown run, a run of another kind, a bad cost."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import InputError
from dcem.analysis.run_report import synthetic_report_text
from dcem.cli import main
from dcem.store.database import Store, StoreError
from tests.dcem.test_store import fake_result

_TARGET = {"risk": "harmful_consensus", "alpha": 0.05, "delta": 0.1, "fwer": "fixed_sequence"}


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    """Two synthetic runs of two seeds (one with a Learn-then-Test target) and a clinical run."""
    path = tmp_path / "rep.duckdb"
    cfg = fake_result().config
    with Store(path) as store:
        for run_id, spec in (("plain", {}), ("ltt", {"risk_target": _TARGET})):
            store.ensure_run(run_id, kind="synthetic", spec=spec, config=cfg, seeds=[0, 1])
            for seed in (0, 1):
                store.save_cell(run_id, fake_result(seed=seed, scenario="S1" if run_id == "plain" else "S3b"))
            store.ledger().finish(run_id)
        store.ensure_run("clin", kind="clinical", spec={"dataset": "ddxplus8"}, config=cfg, seeds=[0])
        store.ensure_run("other", kind="k", spec={}, config=cfg, seeds=[0])
    return path


@pytest.mark.parametrize("run_id, cost", [("plain", None), ("ltt", None), ("plain", 2.0)])
def test_the_text_is_what_the_command_prints(db: Path, run_id: str, cost: float | None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    flags = [] if cost is None else ["--escalation-cost", f"{cost:g}"]
    assert main(["report", "--db", str(db), "--run", run_id, *flags]) == 0
    printed = capsys.readouterr().out
    with Store(db, read_only=True) as store:
        text = (synthetic_report_text(store, run_id) if cost is None
                else synthetic_report_text(store, run_id, escalation_cost=cost))
    assert text == printed
    assert text.startswith(f"Run {run_id}: mean ± std over seeds\n") and text.endswith("\n")
    for heading in ("Comparison with baselines (Fig. 3)", "Partial-compliance ablation (Table 5",
                    "Second view: the outcome reached BY round T", "Escalation ablation (D-CEM vs without"):
        assert heading in text
    assert ("Learn-then-Test" in text) == (run_id == "ltt")
    assert f"the risk with escalation at {cost or 0.5:g}" in text


def test_the_cost_changes_the_text(db: Path) -> None:
    with Store(db, read_only=True) as store:
        assert synthetic_report_text(store, "plain") != synthetic_report_text(store, "plain", escalation_cost=2.0)


@pytest.mark.parametrize("run_id, needle", [
    ("missing", "no run 'missing' in"),
    ("clin", "run clin is a clinical run (python -m dcem_clinical report --run clin)"),
    ("other", "run other is a k run, not a synthetic one"),
])
def test_an_unknown_run_or_another_kind_is_one_line(db: Path, run_id: str, needle: str) -> None:
    with Store(db, read_only=True) as store, pytest.raises(StoreError) as refused:
        synthetic_report_text(store, run_id)
    assert needle in str(refused.value) and "\n" not in str(refused.value)


def test_the_command_refuses_another_kind_in_one_line(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(db), "--run", "other"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "not a synthetic one" in err and "Traceback" not in err


@pytest.mark.parametrize("cost", [-1.0, float("nan"), 1e9])
def test_a_cost_out_of_range_is_refused(db: Path, cost: float) -> None:
    with Store(db, read_only=True) as store, pytest.raises(InputError, match="escalation_cost"):
        synthetic_report_text(store, "plain", escalation_cost=cost)
