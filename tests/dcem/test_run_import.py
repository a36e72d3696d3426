"""Run exports loaded back into a store (dcem.store.run_import) and the shipped demo
(dcem.store.demo): every table restored, usable by the walkthrough and the what-if
replay, idempotent, atomic, and a modified export refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

from common.db import StoreError
from dcem.analysis.run_info import describe_run
from studio.views.walkthrough import case_list, case_trace
from dcem.store.case_reads import agent_turns
from dcem.analysis.whatif import baseline_metrics, load_run_replay
from common.errors import InputError
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS, FEATURED_RUN, VIEWS_EXPORT, demo_run_ids, ensure_demo, opening_run
from dcem.store.run_export import load_run_export
from dcem.store.run_import import import_run_export, stored_run_ids

SYNTHETIC, CLINICAL, *PANELS = DEMO_EXPORTS  # the informative panels, the views grid, the panel of three
_TABLES = ("runs", "cells", "cases", "case_texts", "traces", "outcomes", "metrics", "ablation", "agent_turns")


def _counts(store: Store) -> dict[str, int]:
    return {t: int(store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in _TABLES}  # noqa: S608


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, list[str]]]:
    """A fresh store with the demo imported once, and the ids ensure_demo returned."""
    store = Store(tmp_path_factory.mktemp("demo") / "demo.duckdb")
    imported = ensure_demo(store)
    yield store, imported
    store.close()


@pytest.fixture
def demo_store(demo: tuple[Store, list[str]]) -> Store:
    return demo[0]


def test_demo_imports_every_shipped_export(demo: tuple[Store, list[str]]) -> None:
    demo_store, imported = demo
    expected = [r for d in DEMO_EXPORTS for r in load_run_export(d).run_ids]
    assert PANELS and imported == expected
    assert len(expected) == 3 + 2 + 2 + 2 + 2 + 1 + 1 and stored_run_ids(demo_store) == set(expected)  # 3 worlds; own cases 1
    assert len(PANELS) == 5  # mixed, pair, views, trio, own cases


@pytest.mark.parametrize("directory", DEMO_EXPORTS, ids=[d.name for d in DEMO_EXPORTS])
def test_imported_metrics_equal_the_exports_metrics(demo_store: Store, directory: Path) -> None:
    export = load_run_export(directory)
    for run_id in export.run_ids:
        want = export.metrics[export.metrics["run_id"] == run_id].drop(columns="run_id")
        got = demo_store.metrics(run_id)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True),
                                      check_dtype=False)


def test_imported_tables_hold_every_exported_row(demo_store: Store) -> None:
    counts = _counts(demo_store)
    exports = [load_run_export(d) for d in DEMO_EXPORTS]
    for table, store_table in (("cells", "cells"), ("cases", "cases"), ("traces", "traces"),
                               ("outcomes", "outcomes"), ("turns", "agent_turns"), ("ablation", "ablation")):
        assert counts[store_table] == sum(len(getattr(e, table)) for e in exports), table
    assert counts["case_texts"] == int(sum(e.cases["text"].notna().sum() for e in exports))
    assert counts["case_texts"] > 0


def test_walkthrough_and_whatif_work_on_an_imported_synthetic_run(demo_store: Store) -> None:
    run_id = load_run_export(SYNTHETIC).run_ids[0]
    cases = case_list(demo_store, run_id)
    assert len(cases) == 4 * 10 * 100 and cases["escalated"].any()
    trace = case_trace(demo_store, run_id, str(cases["case_id"].iloc[0]))
    first = trace.rounds.iloc[0]
    # the state columns an export leaves out are recomputed: beliefs sum to one
    assert np.allclose(np.stack(list(first["posteriors"])).sum(axis=1), 1.0)
    assert abs(float(np.sum(first["pooled"])) - 1.0) < 1e-9
    assert len(first["dangerous_miss"]) == len(first["reports"]) == len(first["agent_risk"])
    replay = load_run_replay(demo_store, run_id)
    assert replay.n_cases == len(cases)
    stored = demo_store.metrics(run_id)
    accuracy = stored[(stored["method"] == "dcem") & (stored["metric"] == "accuracy")]["value"].mean()
    assert abs(baseline_metrics(replay)["accuracy"] - accuracy) < 1e-9


def test_walkthrough_reads_an_imported_clinical_run(demo_store: Store) -> None:
    export = load_run_export(CLINICAL)
    run_id = export.run_ids[0]
    cases = case_list(demo_store, run_id)
    assert len(cases) == len(export.outcomes[(export.outcomes["run_id"] == run_id)
                                             & (export.outcomes["method"] == "dcem")])
    turns = agent_turns(demo_store, run_id, str(cases["case_id"].iloc[0]), "dcem")
    assert not turns.empty and all(p is not None and abs(sum(p) - 1) < 1e-6 for p in turns["probabilities"])
    # the notes the agents received travel with the export (the walkthrough shows them)
    later = turns[turns["round"] > 1]
    assert not later.empty and later["note"].notna().all() and turns["reply"].notna().any()
    assert load_run_replay(demo_store, run_id).n_cases == len(cases)


def test_importing_twice_adds_nothing(demo_store: Store) -> None:
    before = _counts(demo_store)
    assert import_run_export(demo_store, CLINICAL) == []
    assert import_run_export(demo_store, SYNTHETIC) == []
    assert ensure_demo(demo_store) == []
    assert _counts(demo_store) == before


def _copy(directory: Path, tmp_path: Path) -> Path:
    target = tmp_path / "export"
    shutil.copytree(directory, target)
    return target


def test_a_tampered_parquet_file_is_refused_and_the_store_unchanged(tmp_path: Path) -> None:
    export = _copy(CLINICAL, tmp_path)
    with open(export / "metrics.parquet", "ab") as fh:
        fh.write(b"\0")
    with Store(tmp_path / "s.duckdb") as store:
        before = _counts(store)
        with pytest.raises(InputError, match="metrics.parquet .*modified or is corrupt"):
            import_run_export(store, export)
        assert _counts(store) == before


def test_a_missing_export_is_a_clear_error(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputError, match="no export directory"):
            import_run_export(store, tmp_path / "nowhere")
        (tmp_path / "empty").mkdir()
        with pytest.raises(InputError, match="not a D-CEM run export"):
            import_run_export(store, tmp_path / "empty")


def test_a_malformed_run_entry_names_its_field(tmp_path: Path) -> None:
    export = _copy(CLINICAL, tmp_path)
    manifest = json.loads((export / "manifest.json").read_text())
    del manifest["runs"][1]["kind"]
    (export / "manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputError, match=r"runs\[1\] lacks the field 'kind'"):
            import_run_export(store, export)
        assert stored_run_ids(store) == set()


def test_a_refused_row_rolls_back_the_whole_import(tmp_path: Path) -> None:
    run_id = load_run_export(CLINICAL).run_ids[1]
    with Store(tmp_path / "s.duckdb") as store:
        # a stray metrics row (no run) that collides with one of the export's rows
        row = load_run_export(CLINICAL).metrics.query("run_id == @run_id").iloc[0]
        store.con.execute("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)",
                          [run_id, row.scenario, int(row.seed), row.method, row.metric, 0.5])
        before = _counts(store)
        with pytest.raises(StoreError, match="nothing was imported"):
            import_run_export(store, CLINICAL)
        assert _counts(store) == before


def test_ensure_demo_leaves_a_store_with_runs_alone(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        imported = import_run_export(store, CLINICAL)
        before = _counts(store)
        assert ensure_demo(store) == []
        assert _counts(store) == before and stored_run_ids(store) == set(imported)


def test_a_first_visit_opens_on_the_views_grid_where_dcem_certifies_steers_and_escalates(demo_store: Store) -> None:
    newest_first = [str(r) for r in demo_store.runs()["run_id"]]
    assert FEATURED_RUN in load_run_export(VIEWS_EXPORT).run_ids and demo_run_ids() == set(newest_first)
    assert newest_first[0] != FEATURED_RUN and opening_run(newest_first) == FEATURED_RUN
    assert opening_run(["user-run", *newest_first]) is None  # a run newer than the demo data: the newest
    assert opening_run([r for r in newest_first if r != FEATURED_RUN]) is None
    assert "answer peers and challenges (anchor 5.0, kappa 0.5, compliance 0.5)" in describe_run(demo_store, FEATURED_RUN)
    cases = case_list(demo_store, FEATURED_RUN, "dcem")
    assert {"STOP_AND_DECIDE", "STOP_AND_ESCALATE"} == set(cases["action"])
    steered = demo_store.con.execute(
        "SELECT count(DISTINCT case_id) FROM traces WHERE run_id = ? AND method = 'dcem' "
        "AND action = 'DIFFERENTIAL_STEER'", [FEATURED_RUN]).fetchone()[0]
    assert steered > 0.1 * len(cases)  # challenged cases beside the decided and escalated ones
    decided = cases.groupby("scenario")["certified"].mean()
    assert ((decided > 0.2) & (decided < 0.95)).sum() >= 3, decided.to_dict()
