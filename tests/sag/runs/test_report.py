"""A SAG run's report as a library function: the same text ``python -m sag report --run RUN``
prints, and the same one-line errors for an unknown run, a D-CEM run and a run with nothing
answered.  The runs are answered by scripted agents: no model is loaded."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinical.questions import load_benchmark
from common.db import StoreError
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from sag.cli import main
from sag.group.config import preset
from sag.runs.report import sag_run_report_text
from sag.runs.run import SagRunSpec, run_sag
from sag.store.tables import SagStore

from ..fakes import ScriptedTurns, constant
from .test_failed_items import FailOn


def _spec(seed: int) -> SagRunSpec:
    return SagRunSpec("medqa", preset("single"), n_items=3, seed=seed)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One store file: a SAG run answered in full, one whose every call failed, one with
    nothing answered yet, and a synthetic D-CEM run; (path, run ids by name)."""
    path = tmp_path_factory.mktemp("sag-report") / "s.duckdb"
    every = lambda spec, runner: {m: runner for m in spec.cfg.models()}  # noqa: E731
    with SagStore(path) as store:
        answered = run_sag(store, _spec(0), runners=every(_spec(0), ScriptedTurns(constant("B"))), retrievers={})
        failing = run_sag(store, _spec(1), runners=every(_spec(1), FailOn(["?", "."])), retrievers={})
        items, _ = _spec(2).split(load_benchmark("medqa"))
        store.ensure_run("waiting", benchmark="medqa", cfg=_spec(2).cfg, items=items, seed=2)
    with Store(path) as dcem_store:
        dcem_store.ensure_run("syn", kind="synthetic", spec={}, config=MediatorConfig(), seeds=[0])
    assert answered.computed == 3 and len(failing.failed) == 3
    return path, {"answered": answered.run_id, "failing": failing.run_id}


@pytest.mark.parametrize("name", ["answered", "failing"])
def test_the_text_is_what_the_command_prints(stored: tuple[Path, dict[str, str]], name: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path, runs = stored
    assert main(["report", "--db", str(path), "--run", runs[name]]) == 0
    printed = capsys.readouterr().out
    with SagStore(path, read_only=True) as store:
        text = sag_run_report_text(store, runs[name])
    assert text == printed
    header, row = text.splitlines()[:2]
    assert header.split()[:3] == ["benchmark", "group", "items"] and "accuracy (95% CI)" in header
    assert row.split()[:2] == ["medqa", "single"]
    if name == "answered":
        assert row.split()[2] == "3" and row.split()[-1] == "0"  # three answered, none failed
    else:
        assert "no answered item" in row and row.split()[-1] == "3"
        assert "failed: items with no answer because a model call failed" in text


@pytest.mark.parametrize("run_id, needle", [
    ("missing", "no SAG run 'missing' in"),
    ("syn", "no SAG run 'syn' in"),  # a D-CEM run is not in the SAG tables
    ("waiting", "run waiting has no answered items yet"),
])
def test_an_unknown_run_or_one_with_nothing_answered_is_one_line(stored: tuple[Path, dict[str, str]], run_id: str,
                                                                 needle: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = stored
    with SagStore(path, read_only=True) as store, pytest.raises(StoreError) as refused:
        sag_run_report_text(store, run_id)
    assert needle in str(refused.value) and "\n" not in str(refused.value)
    assert main(["report", "--db", str(path), "--run", run_id]) == 2  # the command says the same, in one line
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {refused.value}\n"
