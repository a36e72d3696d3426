"""The Overview page: where to start, the demo-data button on an empty store, the
method comparison and runs in table widgets (metric names in words with tooltips,
shares in percent), the glossary expander and the research-tool disclaimer."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from studio.views.glossary import term_help
from studio.views.metric_tables import CLINICAL_TITLES, comparison_view
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS
from dcem.store.run_export import load_run_export
from tests.dcem.test_store import fake_result

ROOT = Path(__file__).resolve().parents[2]


def _app(monkeypatch: pytest.MonkeyPatch, db: Path, timeout: float = 60) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout).run()


def _runs_table(at: AppTest) -> tuple[pd.DataFrame, dict[str, dict]]:
    """The stored-runs table widget (the last one) and its column configuration."""
    frame = at.dataframe[-1]
    assert "run_id" in frame.value.columns
    return frame.value, json.loads(frame.proto.columns)


def test_an_empty_store_offers_demo_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _app(monkeypatch, tmp_path / "none.duckdb")
    assert not at.exception
    assert any("not clinical advice" in i.value for i in at.info)
    assert any("holds no runs yet" in i.value for i in at.info)
    assert at.button(key="overview_create_demo").label == "Create demo data"


def test_create_demo_data_imports_the_shipped_runs_and_shows_them(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    at = _app(monkeypatch, tmp_path / "none.duckdb", timeout=240)
    at.button(key="overview_create_demo").click().run()
    assert not at.exception
    ids = [r for d in DEMO_EXPORTS for r in load_run_export(d).run_ids]
    assert any(f"Imported {len(ids)} demo runs" in s.value for s in at.success)
    options = at.selectbox(key="overview_run").options  # (the picker may show a label beside each id)
    assert len(options) == len(ids) and all(any(r in o for o in options) for r in ids)
    assert set(_runs_table(at)[0]["run_id"]) == set(ids)
    # values that do not apply (a baseline's action mix, a synthetic run's agents) read as a dash, not "None"
    assert at.dataframe and all(d.proto.placeholder == "—" for d in at.dataframe)
    at.run()  # the next visit: runs are stored, no button
    assert "overview_create_demo" not in [b.key for b in at.button] and not at.exception
    # a newcomer reads that these are the demo data and what the featured run shows (issue 51, item 13)
    assert any(m.value.startswith(f"Demo data: the store holds {len(ids)} runs shipped with the project")
               and "two statistical members that each read part of a case" in m.value for m in at.markdown)
    # the featured run's S3a (issue 51, item 5): escalation free D-CEM is below Single best, charged at 0.5 above
    risk = at.dataframe[0].value
    s3a = risk[risk["scenario"] == "S3a"].set_index("method")
    assert s3a.loc["D-CEM", "system_risk"] == pytest.approx(0.116)
    assert s3a.loc["D-CEM", "charged_risk"] == pytest.approx(0.368)
    assert s3a.loc["Single best", "charged_risk"] == pytest.approx(0.226)


def test_where_to_start_links_three_pages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _app(monkeypatch, tmp_path / "none.duckdb")
    labels = [link.proto.label for link in at.get("page_link")]
    assert labels[:3] == ["1. Case walkthrough", "2. Loss and thresholds", "3. Experiments"]
    assert "Open the full glossary" in labels
    assert at.subheader[0].value == "Where to start"


def test_the_overview_runs_alone_with_page_names_instead_of_links(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "overview.py"), default_timeout=60).run()
    assert not at.exception
    assert any(m.value == "**1. Case walkthrough**" for m in at.markdown)


def test_the_glossary_expander_explains_the_metrics(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _app(monkeypatch, tmp_path / "none.duckdb")
    assert at.expander[0].label.startswith("Glossary")
    text = "\n".join(m.value for m in at.expander[0].markdown)
    assert "**Energy** (`energy`)" in text and "**Harmful consensus** (`harmful_consensus`)" in text


def test_the_method_comparison_is_a_table_with_words_tooltips_and_percentages(
        monkeypatch: pytest.MonkeyPatch, run_db: Path) -> None:
    at = _app(monkeypatch, run_db)
    assert not at.exception and not at.text  # no fixed-width text tables any more
    assert any("ui-run" in s.value for s in at.subheader)
    assert len(at.dataframe) == 4  # the method comparison, accuracy beside chance, recall per class, the stored runs
    assert {"chance", "most frequent class", "lowest recall"} <= set(at.dataframe[1].value.columns)
    shown, columns = at.dataframe[0].value, json.loads(at.dataframe[0].proto.columns)
    with Store(run_db, read_only=True) as store:
        metrics = store.metrics("ui-run")
    dcem = metrics[(metrics["method"] == "dcem") & (metrics["metric"] == "accuracy") & (metrics["scenario"] == "S1")]
    row = shown[(shown["scenario"] == "S1") & (shown["method"] == "D-CEM")]
    assert row["accuracy"].iloc[0] == pytest.approx(100 * dcem["value"].mean())
    assert columns["harmful_consensus"]["label"] == "Harmful consensus"
    assert columns["harmful_consensus"]["help"] == term_help("harmful_consensus")
    assert columns["accuracy"]["type_config"]["format"] == "%.1f %%"
    assert columns["risk"]["label"] == "Expected loss"
    assert list(shown.columns) == list(comparison_view(metrics).columns)
    runs = _runs_table(at)[1]
    assert runs["run_id"]["label"] == "Run" and runs["created_at"]["label"] == "Started"


def test_the_spread_toggle_shows_mean_and_std(monkeypatch: pytest.MonkeyPatch, run_db: Path) -> None:
    at = _app(monkeypatch, run_db)
    at.toggle(key="overview_spread").set_value(True).run()
    shown = at.dataframe[0].value
    assert all(" % ± " in str(v) for v in shown["accuracy"])


def test_a_clinical_run_shows_the_clinical_tables(monkeypatch: pytest.MonkeyPatch, clinical_db: Path,
                                                  tmp_path: Path) -> None:
    db = tmp_path / "clinical.duckdb"
    shutil.copy(clinical_db, db)
    with Store(db, read_only=True) as store:
        run_id = store.latest_run("clinical")
    at = _app(monkeypatch, db)
    at.selectbox(key="overview_run").select(run_id).run()
    assert not at.exception
    assert len(at.dataframe) == 7  # the four clinical tables, beside chance, recall per class, the stored runs
    assert {"chance", "most frequent class", "top answer"} <= set(at.dataframe[4].value.columns)
    assert "cases" in at.dataframe[5].value.columns
    # tables named by what they show, not by the paper's numbers (issue 51, item 13)
    titles = [m.value for m in at.markdown if m.value.startswith("**") and m.value.endswith("**")]
    assert [f"**{t}**" for t in CLINICAL_TITLES] == [t for t in titles if t.strip("*") in CLINICAL_TITLES]
    assert not [m.value for m in at.markdown if "Table 6" in m.value or "Table 1" in m.value]
    risk_table = at.dataframe[0].value
    assert list(risk_table.columns) == ["scenario", "method", "decided_rate", "system_risk", "charged_risk",
                                        "harmful_consensus"]
    assert (risk_table.loc[risk_table["method"] != "D-CEM", "decided_rate"] == 100.0).all()
    notes = [c.value for c in at.caption if c.value.startswith("System risk (escalation free) and harmful consensus")]
    assert len(notes) == 1  # said once, under the first risk table, with D-CEM's share decided
    assert "an escalated case counts 0" in notes[0] and "D-CEM decided " in notes[0]
    assert "Risk with escalation at 0.5 counts each escalated case 0.5" in notes[0]


def test_a_store_with_a_run_keeps_the_disclaimer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        result = fake_result()
        store.ensure_run("demo-run", kind="synthetic", spec={}, config=result.config, seeds=[0])
        store.save_cell("demo-run", result)
    at = _app(monkeypatch, db)
    assert not at.exception
    assert any("demo-run" in s.value for s in at.subheader)
    assert any("not clinical advice" in i.value for i in at.info)
    assert "overview_create_demo" not in [b.key for b in at.button]


def test_the_overview_explains_the_scenarios_and_where_runs_are_launched(monkeypatch: pytest.MonkeyPatch,
                                                                           run_db: Path) -> None:
    """Issue 51, item 13: S1-S3b in one line each where the run names them, the Experiments
    page as the place to launch runs, a run of one's own said to be one."""
    at = _app(monkeypatch, run_db)
    assert not at.exception
    intro = next(m.value for m in at.markdown if m.value.startswith("D-CEM mediates a panel"))
    assert "on the Experiments page" in intro
    scenarios = next(m.value for m in at.markdown if m.value.startswith("**Scenarios**"))
    lines = [line for line in scenarios.splitlines() if line.startswith("- **S")]
    assert [line.split("**")[1] for line in lines] == ["S1", "S2", "S3a", "S3b"]
    assert all(line.endswith(".") and len(line) < 160 for line in lines)
    assert any(m.value.startswith("This run is not part of the demo data") for m in at.markdown)


def test_the_method_comparison_shows_the_risk_with_escalation_beside_system_risk(
        monkeypatch: pytest.MonkeyPatch, run_db: Path) -> None:
    """Issue 51, item 5: the charged risk beside the escalation-free one, each named, at the
    cost the page states; another cost moves the column and its title."""
    at = _app(monkeypatch, run_db)
    shown, columns = at.dataframe[0].value, json.loads(at.dataframe[0].proto.columns)
    order = list(shown.columns)
    assert order[order.index("system_risk") + 1] == "charged_risk"
    assert columns["system_risk"]["label"] == "System risk (escalation free)"
    assert columns["charged_risk"]["label"] == "Risk with escalation at 0.5"
    assert at.number_input(key="overview_escalation_cost").value == 0.5
    dcem = shown[shown["method"] == "D-CEM"]
    assert (dcem["escalation_rate"] > 0).any()  # so the charge shows
    assert np.allclose(dcem["charged_risk"], dcem["system_risk"] + 0.5 * dcem["escalation_rate"] / 100)
    at.number_input(key="overview_escalation_cost").set_value(2.0).run()
    assert not at.exception
    shown, columns = at.dataframe[0].value, json.loads(at.dataframe[0].proto.columns)
    assert columns["charged_risk"]["label"] == "Risk with escalation at 2"
    dcem = shown[shown["method"] == "D-CEM"]
    assert np.allclose(dcem["charged_risk"], dcem["system_risk"] + 2.0 * dcem["escalation_rate"] / 100)
    assert any("Risk with escalation at 2 counts each escalated case 2 instead" in c.value for c in at.caption)
