"""A group of an evaluation resumes only with the settings it was started with (issue 51, item 2).

``python -m sag eval`` names an evaluation by its suite and sizes and each group by its name;
before, the same group name with other settings (``--temperature 0.7``) silently pointed the
evaluation's parts at new runs, and a stopped command left the report mixing two configs
under one name.  Now every stored group is checked before the first one runs: exit 2, one
line naming the first field that differs, nothing written."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_inprocess import run_main
from tests.sag.cli_fakes import scripted_models
from tests.store_rows import store_rows

EVAL = ["eval", "--suite", "accuracy", "--items", "1", "-q"]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding evaluation accuracy-n1 for the group single (scripted answers)."""
    db = tmp_path_factory.mktemp("eval") / "e.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        scripted_models(mp)
        out = run_main("sag", [*EVAL, "--groups", "single", "--db", str(db)])
    assert out.returncode == 0 and "single: 6 parts" in out.stdout, out.stderr
    return db


def _refused(db: Path, args: list[str]) -> str:
    before = store_rows(db)
    out = run_main("sag", [*EVAL, *args, "--db", str(db)])
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert store_rows(db) == before  # no row added, removed or changed
    return out.stderr


def test_the_same_group_name_with_another_temperature_is_refused(evaluated: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "e.duckdb"
    shutil.copy(evaluated, db)
    runner = scripted_models(monkeypatch)
    err = _refused(db, ["--groups", "single", "--temperature", "0.7"])
    assert err.startswith("error: group single of evaluation accuracy-n1 (part accuracy/")
    assert "is stored with other settings: config.temperature stored 0.0, given 0.7; nothing was written" in err
    assert runner.requests == []
    again = run_main("sag", [*EVAL, "--groups", "single", "--db", str(db)])
    assert again.returncode == 0 and "(0 answered now; 0 model calls" in again.stdout  # the same settings resume


@pytest.mark.parametrize("mode", [["--in-process"], []])
def test_every_group_is_checked_before_the_first_one_runs(evaluated: Path, tmp_path: Path, mode: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "e.duckdb"
    shutil.copy(evaluated, db)
    runner = scripted_models(monkeypatch)
    children: list[object] = []
    monkeypatch.setattr("sag.evaluation.command.subprocess.call", lambda argv: children.append(argv) or 0)
    err = _refused(db, ["--groups", "vote-6,single", "--t-max", "1", *mode])  # vote-6 is new, single is stored
    assert "group single of evaluation accuracy-n1" in err and "config.t_max stored 3, given 1" in err
    assert runner.requests == [] and children == []  # vote-6 did not run either
