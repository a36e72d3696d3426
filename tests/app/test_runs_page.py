"""The Runs page: every run of every kind in the store, from the ledger, each with its
status line, failed units and the link to the page that shows its kind."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from common.db import Database
from common.ledger import Ledger
from common.run_export import import_runs_export
from studio.run_kinds import load_kinds
from studio.views.runs_view import PAGE_FILES, run_detail, runs_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs_page") / "store.duckdb"
    for folder in ("data/results/dcem_clinical", "data/results/training/ddx-views-judge"):
        import_runs_export(path, ROOT / folder, load_kinds())
    with Database(path) as store:  # a run stopped with a failed unit
        ledger = Ledger(store)
        ledger.start("grid-x", "synthetic", {"spec": {"scenarios": ["S1"]}, "seeds": [0, 1]})
        ledger.unit_failed("grid-x", "S1/seed 1", "ValueError: the agent gave no answer")
        ledger.mark_failed("grid-x")
    return path


def test_the_table_lists_every_kind_with_its_page(db: Path) -> None:
    kinds = load_kinds()
    with Database(db) as store:
        table = runs_table(store, kinds)
    assert set(table["Kind"]) == {"clinical", "training", "synthetic"}
    assert all(p in PAGE_FILES for p in table["Shown on"])
    row = table.set_index("Run").loc["grid-x"]
    assert (row["Status"], row["Units done"], row["Units failed"], row["What it is"]) == ("failed", 0, 1,
                                                                                         "S1; 2 seed(s)")
    with Database(db) as store:
        detail = run_detail(store, kinds, "grid-x")
    assert detail.failures == [("S1/seed 1", "ValueError: the agent gave no answer")]
    assert "retries the failed ones" in detail.status_line and detail.page_file == "pages/experiments.py"


def test_the_page_shows_the_runs_and_a_runs_details(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception and at.title[0].value == "Runs"
    assert any("not clinical advice" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert set(table["Kind"]) == {"clinical", "training", "synthetic"}
    at.selectbox(key="runs_kind").set_value("synthetic").run()
    assert list(at.dataframe[0].value["Run"]) == ["grid-x"]
    assert any("retries the failed ones" in m.value for m in at.markdown)


def test_an_empty_store_says_how_to_get_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "empty.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    assert any("holds no run yet" in i.value for i in at.info)
