"""The sidebar's one import: a D-CEM run export, a SAG export (runs or an evaluation) and the
older SAG runs export are told apart by their manifest; bad folders get one sentence and
write nothing; importing twice adds nothing."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from dcem.store.run_import import stored_run_ids
from sag.group.config import preset
from sag.runs.store_export import write_store_export
from sag.runs.run import SagRunSpec, run_sag
from sag.runs.run_export import write_run_export
from sag.store.tables import SagStore
from studio.export_import import import_export
from studio.store_scope import run_scope
from tests.sag.fakes import ScriptedTurns, constant

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "data" / "results" / "dcem_synthetic"


@pytest.fixture(scope="module")
def sag_exports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(the full SAG export of one scripted run, the older runs export of it, its run id)."""
    tmp = tmp_path_factory.mktemp("sag-exports")
    spec = SagRunSpec("medqa", preset("single"), n_items=3, seed=1)
    with SagStore(tmp / "made.duckdb") as store:
        run_id = run_sag(store, spec, runners={m: ScriptedTurns(constant("A")) for m in spec.cfg.models()}).run_id
        write_run_export(store, [run_id], tmp / "older", command="c")
    write_store_export(tmp / "made.duckdb", tmp / "full", command="c", run_ids=[run_id])
    return tmp / "full", tmp / "older", run_id


def _panel() -> None:
    from studio.export_import import import_panel
    from studio.store_scope import run_scope

    with run_scope():
        import_panel()


def test_the_import_panel_imports_a_dcem_export_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "target.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_function(_panel, default_timeout=120).run()
    at.text_input(key="import_export_folder").set_value(str(SYNTHETIC)).run()
    at.button(key="import_export_go").click().run()
    assert not at.exception
    runs = json.loads((SYNTHETIC / "manifest.json").read_text())["runs"]
    assert any(f"Imported {len(runs)} D-CEM run(s)" in s.value for s in at.success)
    at.button(key="import_export_go").click().run()
    assert any("nothing was added" in i.value for i in at.info)
    with Store(db) as store:
        assert stored_run_ids(store) == {r["run_id"] for r in runs}


def test_the_dashboard_offers_the_import_in_its_sidebar(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert at.sidebar.text_input(key="import_export_folder").label == "Export folder"
    assert at.sidebar.button(key="import_export_go").label == "Import"


def test_a_sag_export_brings_every_debate_and_a_second_import_adds_nothing(
        sag_exports: tuple[Path, Path, str], tmp_path: Path) -> None:
    full, _, run_id = sag_exports
    db = str(tmp_path / "t.duckdb")
    with run_scope():
        first = import_export(str(full), db)
    with run_scope():
        again = import_export(str(full), db)
    assert first.kind == "success" and "1 SAG run(s)" in first.message and "Agent group" in first.message
    assert again.kind == "info"
    with SagStore(db) as store:
        assert list(store.outcomes(run_id)["answer"]) == ["A"] * 3
        assert not store.messages(run_id, store.outcomes(run_id)["item_id"][0]).empty


def test_the_older_runs_export_brings_its_outcomes_and_says_so(sag_exports: tuple[Path, Path, str],
                                                                  tmp_path: Path) -> None:
    _, older, run_id = sag_exports
    db = str(tmp_path / "t.duckdb")
    with run_scope():
        outcome = import_export(str(older), db)
    assert outcome.kind == "success" and "outcomes only" in outcome.message and "1 SAG run(s)" in outcome.message
    with SagStore(db) as store:
        assert list(store.outcomes(run_id)["answer"]) == ["A"] * 3
        assert store.messages(run_id, store.outcomes(run_id)["item_id"][0]).empty  # no debate text was kept


def test_bad_folders_get_one_sentence_and_write_nothing(sag_exports: tuple[Path, Path, str], tmp_path: Path) -> None:
    full, _, _ = sag_exports
    db = str(tmp_path / "t.duckdb")
    assert "Give the folder" in import_export("  ", db).message
    assert "holds no manifest.json" in import_export(str(tmp_path), db).message
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "manifest.json").write_text('{"format": "someone-else/3"}')
    outcome = import_export(str(foreign), db)
    assert outcome.kind == "error" and "'someone-else/3'" in outcome.message
    changed = tmp_path / "changed"
    shutil.copytree(full, changed)
    frame = pd.read_parquet(changed / "sag_outcomes.parquet")
    frame.loc[0, "answer"] = "B"
    frame.to_parquet(changed / "sag_outcomes.parquet", index=False)
    with run_scope():
        outcome = import_export(str(changed), db)
    assert outcome.kind == "error" and "Nothing was imported" in outcome.message and "sag_outcomes" in outcome.message
    with SagStore(db) as store:
        assert store.runs().empty


def test_the_import_panel_shows_each_table_as_it_goes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 51: a long import showed one line for its whole length; now each step has its line."""
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "target.duckdb"))
    at = AppTest.from_function(_panel, default_timeout=600).run()
    at.text_input(key="import_export_folder").set_value(str(SYNTHETIC)).run()
    at.button(key="import_export_go").click().run()
    assert not at.exception and any("Imported" in s.value for s in at.success)
    steps = [c.value for c in at.caption]
    files = [f["name"] for f in json.loads((SYNTHETIC / "manifest.json").read_text())["files"]]
    assert sorted(f"reading and checking {name}" for name in files) == sorted(s for s in steps if s.startswith("reading"))
    assert "checking the tables' keys against each other" in steps
    assert any(s.startswith("shaping the rows of") for s in steps)
    assert any(s.startswith("writing") and s.endswith("rows of traces") for s in steps)
    bars = [str(b.proto.text) for b in at.get("progress")]
    assert bars and bars[-1] == steps[-1]  # the bar names the step it stands at
