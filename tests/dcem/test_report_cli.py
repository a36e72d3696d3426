"""The report command over stored cells, as text and JSON."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem.cli import main
from dcem.store.database import Store
from tests.dcem.test_store import fake_result


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "rep.duckdb"
    with Store(path) as store:
        cfg = fake_result().config
        store.ensure_run("rep", kind="synthetic", spec={}, config=cfg, seeds=[0, 1])
        for seed in (0, 1):
            store.save_cell("rep", fake_result(seed=seed))
        store.ledger().finish("rep")
    return path


def test_json_report_aggregates_over_seeds(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] == "rep"
    risk = [r for r in out["comparison"] if r["method"] == "dcem" and r["metric"] == "risk"]
    expected = [fake_result(seed=s).methods["dcem"].metrics["risk"] for s in (0, 1)]
    assert len(risk) == 1 and risk[0]["n"] == 2
    assert risk[0]["mean"] == pytest.approx(sum(expected) / 2)
    assert risk[0]["std"] == pytest.approx(abs(expected[0] - expected[1]) / 2)
    assert {r["metric"] for r in out["compliance"]} == {"A1", "A2", "risk", "sa_hr", "escalation_rate"}
    assert {r["method"] for r in out["escalation"]} == {"dcem"}


def test_text_report_names_methods_and_tables(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    for fragment in ("Comparison with baselines", "Partial-compliance ablation", "Escalation ablation",
                     "D-CEM", "Single best", "sa_hr", "±"):
        assert fragment in text


def test_report_errors_are_one_line(tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(tmp_path / "empty.duckdb")]) == 2
    assert "no store file" in capsys.readouterr().err and not (tmp_path / "empty.duckdb").exists()
    Store(tmp_path / "empty.duckdb").close()
    assert main(["report", "--db", str(tmp_path / "empty.duckdb")]) == 2
    assert "no stored synthetic runs" in capsys.readouterr().err
    assert main(["report", "--db", str(db), "--run", "missing"]) == 2
    assert "no run 'missing'" in capsys.readouterr().err
    assert main(["runs", "--db", str(db)]) == 0
    assert "rep" in capsys.readouterr().out


def test_run_command_refuses_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "x.duckdb")
    assert main(["run", "synthetic", "--scenarios", "S7", "--db", db, "--quiet"]) == 2
    assert "unknown scenario 'S7'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["run", "synthetic", "--seeds", "0", "--db", db, "--quiet"])
    assert usage.value.code == 2 and "--seeds: must be a whole number from 1" in capsys.readouterr().err
    assert main(["run", "synthetic", "--param", "eps_safe=5", "--db", db, "--quiet"]) == 2
    assert "eps_safe" in capsys.readouterr().err
