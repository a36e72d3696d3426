"""A SAG store and a runs export written before runs became units of the one runner still
open, report the same and resume with no model call.

``tests/fixtures/sag_store_before_units.duckdb.gz`` was written by that release: two runs of
scripted agents on three MedQA items (``sag-6`` with t_max 2, and ``sag-6-dcem`` with its
calibration on six items), with their call log; ``sag_runs_export_before_units/`` is that
release's ``python -m sag export`` of both, and ``sag_report_before_units.txt`` its
``python -m sag report``.
"""
from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sag.group.config import preset
from sag.runs.store_export import import_store_export, write_store_export
from sag.runs.run import SagRunSpec, run_sag
from sag.runs.run_export import read_run_export
from sag.store.tables import SagStore

from ..fakes import ScriptedTurns, constant

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
SPECS = (SagRunSpec("medqa", preset("sag-6").with_changes(t_max=2), n_items=3, seed=4),
         SagRunSpec("medqa", preset("sag-6-dcem").with_changes(t_max=2, n_cal=6), n_items=3, seed=4))
RUNS = ("sag-medqa-sag-6-9dcc05c49f", "sag-medqa-sag-6-dcem-a1e5db4c7b")


@pytest.fixture()
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.duckdb"
    with gzip.open(FIXTURES / "sag_store_before_units.duckdb.gz", "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _report(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "sag", "report", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_specs_still_name_the_old_runs() -> None:
    for spec, run_id in zip(SPECS, RUNS):
        assert spec.run_id(spec.prepare()[0]) == run_id


def test_report_is_what_the_old_release_printed(old_store: Path) -> None:
    assert _report("--db", str(old_store)) == (FIXTURES / "sag_report_before_units.txt").read_text()


def test_the_same_runs_resume_with_no_model_call(old_store: Path) -> None:
    runners = {"smollm2-135m": ScriptedTurns(constant("B"))}
    with SagStore(old_store) as store:
        for spec in SPECS:
            summary = run_sag(store, spec, runners=runners, retrievers={})
            assert (summary.resumed, summary.computed, summary.model_calls) == (True, 0, 0)
    assert not runners["smollm2-135m"].requests  # no model was asked


def test_an_item_lost_from_an_old_run_is_answered_again_from_its_call_log(old_store: Path) -> None:
    runners = {"smollm2-135m": ScriptedTurns(constant("B"))}
    with SagStore(old_store) as store:
        before = store.outcomes(RUNS[1])
        lost = str(before["item_id"].iloc[1])
        for table in ("sag_outcomes", "sag_messages", "sag_mediator"):
            store.con.execute(f"DELETE FROM {table} WHERE run_id = ? AND item_id = ?", [RUNS[1], lost])
        summary = run_sag(store, SPECS[1], runners=runners, retrievers={})
        after = store.outcomes(RUNS[1])
    assert (summary.computed, summary.model_calls) == (1, 0) and summary.cached_calls > 0
    assert not runners["smollm2-135m"].requests
    assert after.set_index("item_id").loc[lost, "answer"] == before.set_index("item_id").loc[lost, "answer"]


def test_the_old_runs_export_still_reads_and_reports(old_store: Path) -> None:
    export = read_run_export(FIXTURES / "sag_runs_export_before_units")
    assert sorted(export.run_ids()) == sorted(RUNS)
    with SagStore(old_store, read_only=True) as store:
        for run in RUNS:
            assert list(export.outcomes_of(run)["answer"]) == list(store.outcomes(run)["answer"])
    assert _report("--from-export", str(FIXTURES / "sag_runs_export_before_units")) == \
        (FIXTURES / "sag_report_before_units.txt").read_text()


def test_the_old_store_exports_in_the_one_form_and_imports_whole(old_store: Path, tmp_path: Path) -> None:
    write_store_export(old_store, tmp_path / "export", command="c")
    with SagStore(tmp_path / "new.duckdb") as store:
        import_store_export(store, tmp_path / "export")
        with SagStore(old_store, read_only=True) as old:
            for run in RUNS:
                assert store.outcomes(run).drop(columns=["created_at"], errors="ignore").equals(
                    old.outcomes(run).drop(columns=["created_at"], errors="ignore"))
            assert store.calibration(RUNS[1]) == old.calibration(RUNS[1])
    assert _report("--from-export", str(tmp_path / "export")) == (FIXTURES / "sag_report_before_units.txt").read_text()
