"""``python -m dcem_clinical``, the pointer left at ``python -m sag``, and ``python -m dcem_clinical report``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem.cli import main as dcem_main
from dcem_clinical.cli import main as clinical_main
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.cli import main as sag_main
from dcem_clinical.run import ClinicalSpec, run_clinical
from tests.cli_inprocess import run_main
from tests.dcem_clinical.clinical_fakes import oracle_backend


@pytest.mark.parametrize("args, needle", [
    (["--dataset", "nope"], "dataset: 'nope' is neither a shipped dataset (ddxplus8, medqa-tri) nor a case file"),
    (["--labels", "A,B"], "--labels, --high-risk, --l-high and --loss describe a case file; ddxplus8 has its own"),
    (["--scenario", "S7"], "scenario"),
    (["--cases", "0"], "--cases"),
    (["--agents", "file:/no/such/model.gguf"], "model.gguf"),
    (["--agents", "mystery-model"], "unknown model key"),
    (["--n-gpu-layers", "-3"], "--n-gpu-layers"),
])
def test_bad_cli_input_exits_2_with_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    out = run_main("dcem_clinical", ["run", "--db", str(tmp_path / "x.duckdb"), "--quiet", *args])
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr


@pytest.mark.parametrize("args, new", [
    (["run", "clinical", "--dataset", "medqa-tri"], "python -m dcem_clinical run --dataset medqa-tri"),
    (["models", "--info"], "python -m dcem_clinical models --info"),
])
def test_old_sag_spelling_points_to_the_new_command(args: list[str], new: str) -> None:
    out = run_main("sag", args)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and new in lines[0] and lines[0].startswith("moved:")


def test_models_lists_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert sag_main(["models"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and "gemma3-270m" in out


def test_clinical_report_prints_tables_6_7_1_for_clinical_runs(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.duckdb"
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1", "S3b"), seeds=(0,), n_cal=12, n_test=8,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=3),
                        free_rounds=2)
    with Store(db) as store:
        run = run_clinical(store, spec, backends=[oracle_backend("ddxplus8", tag="a"),
                                                  oracle_backend("ddxplus8", anchor=6, tag="b")]).run_id
    assert clinical_main(["report", "--db", str(db), "--run", run]) == 0
    out = capsys.readouterr().out
    for title in ("Table 6", "Table 7", "Table 1", "== ddxplus8 =="):
        assert title in out
    assert "S3b" in out and "D-CEM w/o escalation" in out
    assert clinical_main(["report", "--db", str(db), "--run", run, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    t7 = {(r["scenario"], r["metric"]): r["mean"] for r in data["table7"]}
    assert 1.0 <= t7[("S1", "avg_rounds")] <= 3.0
    assert {r["method"] for r in data["table6"]} == {"single", "free", "pool", "dcem"}
    assert clinical_main(["report", "--db", str(db)]) == 0  # the newest clinical run by default
    assert f"Run {run}:" in capsys.readouterr().out
    # each command names the other for the other kind of run
    assert dcem_main(["report", "--db", str(db), "--run", run]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"python -m dcem_clinical report --run {run}" in err
    assert dcem_main(["report", "--db", str(db)]) == 2  # no synthetic run to default to
    assert "no stored synthetic runs" in capsys.readouterr().err


def test_stop_when_decided_from_the_command_line_with_statistical_agents(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.duckdb")
    args = ["run", "--dataset", "ddxplus8", "--agents", "stat,stat:lr-evidence", "--cal-cases", "24", "--cases", "10",
            "--t-max", "4", "--free-rounds", "2", "--quiet", "--db", db]
    assert sag_main([*args, "--stop-when-decided"]) == 0
    assert sag_main(args) == 0
    with Store(db, read_only=True) as store:
        specs = store.con.execute("SELECT run_id, spec_json FROM runs ORDER BY run_id").fetchall()
        assert len(specs) == 2
        flags = sorted(json.loads(s).get("stop_when_decided", False) for _, s in specs)
        assert flags == [False, True]
        turns = store.con.execute("SELECT r.spec_json LIKE '%stop_when_decided%' AS stopped, count(*) FROM "
                                  "agent_turns t JOIN runs r USING (run_id) WHERE t.method = 'dcem' GROUP BY ALL "
                                  "ORDER BY stopped").fetchall()
    assert turns[1][1] < turns[0][1] == 2 * 10 * 4  # the fixed horizon asks every round; the stopped run less
