"""The clinical run report as a library function: the same text ``python -m dcem_clinical
report --run RUN`` prints, and one-line errors for an unknown run, a run of another kind, a
bad cost.  The run's members are statistical agents: no model is loaded."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import InputError
from dcem.core.config import MediatorConfig
from dcem.store.database import Store, StoreError
from dcem_clinical.cli import main
from dcem_clinical.report.run_report import clinical_report_text
from dcem_clinical.run import ClinicalSpec, run_clinical


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with a clinical run of two statistical members (S1 and S3b, one seed), a
    synthetic run and a run of a third kind; (path, the clinical run's id)."""
    path = tmp_path_factory.mktemp("clinical-report") / "r.duckdb"
    config = MediatorConfig(prior="empirical", t_max=3)
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1", "S3b"), seeds=(0,), n_cal=16, n_test=8,
                        agents=("stat", "stat:lr-evidence"), base_config=config, free_rounds=2)
    with Store(path) as store:
        summary = run_clinical(store, spec)
        store.ensure_run("syn", kind="synthetic", spec={}, config=config, seeds=[0])
        store.ensure_run("other", kind="k", spec={}, config=config, seeds=[0])
    assert summary.complete
    return path, summary.run_id


@pytest.mark.parametrize("cost", [None, 0.0])
def test_the_text_is_what_the_command_prints(stored: tuple[Path, str], cost: float | None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path, run_id = stored
    flags = [] if cost is None else ["--escalation-cost", f"{cost:g}"]
    assert main(["report", "--db", str(path), "--run", run_id, *flags]) == 0
    printed = capsys.readouterr().out
    with Store(path, read_only=True) as store:
        text = (clinical_report_text(store, run_id) if cost is None
                else clinical_report_text(store, run_id, escalation_cost=cost))
    assert text == printed
    assert text.startswith(f"Run {run_id}: ddxplus8 S1,S3b, agents stat + stat:lr-evidence, seeds [0]\n")
    for heading in ("mean ± std over seeds", "== ddxplus8 ==", "Table 6: system risk and harmful consensus",
                    "Table 7: D-CEM escalation rate and average rounds",
                    "Table 1: D-CEM with and without STOP_AND_ESCALATE", "S3b"):
        assert heading in text
    assert f"the risk with escalation at {0.5 if cost is None else cost:g}" in text


@pytest.mark.parametrize("run_id, needle", [
    ("missing", "no run 'missing' in"),
    ("syn", "run syn is a synthetic run: report it with python -m dcem report --run syn"),
    ("other", "run other is a k run, not a clinical one"),
])
def test_an_unknown_run_or_another_kind_is_one_line(stored: tuple[Path, str], run_id: str, needle: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = stored
    with Store(path, read_only=True) as store, pytest.raises(StoreError) as refused:
        clinical_report_text(store, run_id)
    assert needle in str(refused.value) and "\n" not in str(refused.value)
    assert main(["report", "--db", str(path), "--run", run_id]) == 2  # the command says the same, in one line
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {refused.value}\n"


def test_a_cost_out_of_range_is_refused(stored: tuple[Path, str]) -> None:
    path, run_id = stored
    with Store(path, read_only=True) as store, pytest.raises(InputError, match="escalation_cost"):
        clinical_report_text(store, run_id, escalation_cost=-0.5)
