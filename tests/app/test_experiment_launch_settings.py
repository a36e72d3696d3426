"""Experiments page: a changed setting never resumes another run (issue 51, item 2).

The page names a launch by the hash of its settings.  Before, the "MAP reports" agents made
the same spec as the specification's agents (the form left ``reports`` at ``sample``), so
choosing them resumed, and reported, the other run.  A store holding the page's run id with
other settings refuses the launch: an error naming the field, nothing written."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from studio.views.launch_form import LaunchProgress, launch_message, read_launch_form
from tests.dcem.test_store import fake_result
from tests.store_rows import rows_of

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "experiments.py")
FORM = read_launch_form(["S1"], "1", "6")  # what the page's fields are set to below


def _page_spec(world: str = "seed"):  # type: ignore[no-untyped-def]
    return FORM.spec(xi=1.0, ablation=False, world=world, compliance="adopt")


def test_the_map_world_is_a_run_of_its_own() -> None:
    seed, mapped = _page_spec("seed"), _page_spec("map")
    assert mapped.reports == "map" and seed.reports == "sample"
    assert mapped.run_id() != seed.run_id()


def test_a_refused_launch_reads_as_an_error() -> None:
    refused = LaunchProgress("syn-1", 0, 1, refused="run syn-1 is stored with other settings: xi stored 0.5")
    assert launch_message(refused) == ("error", "Not launched: run syn-1 is stored with other settings: xi stored 0.5")


def _open(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored_spec) -> tuple[Path, AppTest]:  # type: ignore[no-untyped-def]
    """The page on a copy of ``run_db`` that also holds the page's run id with ``stored_spec``
    and its S1 / seed 0 cell, with the launch fields set to S1, one seed, T = 6."""
    db = tmp_path / "launch.duckdb"
    shutil.copy(run_db, db)
    with Store(db) as store:
        run_id, cell = _page_spec().run_id(), fake_result(seed=0, scenario="S1")
        store.ensure_run(run_id, kind="synthetic", spec=stored_spec.to_dict(), config=stored_spec.base_config,
                         seeds=list(stored_spec.seeds))
        store.save_cell(run_id, cell)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.multiselect(key="exp_scen").set_value(["S1"]).run()
    at.text_input(key="exp_seeds").input("1").run()
    at.text_input(key="exp_t").input("6").run()
    return db, at


def test_choosing_map_reports_does_not_count_the_stored_seed_world_run(run_db: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _, at = _open(run_db, tmp_path, monkeypatch, _page_spec("seed"))
    assert any(c.value.startswith("1 cell: 1 scenario × 1 seed; all already stored") for c in at.caption)
    at.radio(key="exp_world").set_value("map").run()
    assert not at.exception
    assert any(c.value == "1 cell: 1 scenario × 1 seed." for c in at.caption), [c.value for c in at.caption]


def test_a_launch_whose_run_id_is_stored_with_other_settings_is_refused(run_db: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db, at = _open(run_db, tmp_path, monkeypatch, replace(_page_spec(), xi=0.5))
    with Store(db) as store:
        before = rows_of(store.con)
    at.button(key="exp_run").click().run()
    assert not at.exception and not at.success
    run_id = _page_spec().run_id()
    assert [e.value for e in at.error] == [
        f"Not launched: run {run_id} is stored with other settings: xi stored 0.5, given 1.0; nothing was written "
        "(repeat the command that started it to resume it, or run these settings under another run id or in "
        "another store)"]
    with Store(db) as store:
        assert rows_of(store.con) == before  # no row added, removed or changed
