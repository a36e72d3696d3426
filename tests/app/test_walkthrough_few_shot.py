"""The walkthrough shows the solved CAL examples a few-shot agent's prompt carried."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from clinical.datasets import load_dataset
from studio.views.few_shot_view import EXAMPLE_TABLE_COLUMNS, EXAMPLES_NOTE, agent_examples
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.informed import EXAMPLE_COLUMNS, turn_examples
from dcem_clinical.run import ClinicalSpec, run_clinical
from dcem_clinical.stat_agent import StatMember
from tests.dcem_clinical.clinical_fakes import oracle_backend

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "walkthrough.py")
N_CAL, N_TEST, K = 12, 6, 2


@pytest.fixture(scope="module")
def few_shot_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clinical run of three members: a statistical agent (no prompt, no examples) and two
    scripted LLM agents with retrieval few-shot k = 2."""
    path = tmp_path_factory.mktemp("few_shot") / "few_shot.duckdb"
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=N_CAL, n_test=N_TEST,
                        agents=("stat", "fake-a", "fake-b"), few_shot_k=K,
                        base_config=MediatorConfig(prior="empirical", t_max=3), free_rounds=2)
    members = [StatMember("nb-evidence"), oracle_backend("ddxplus8", tag="a"),
               oracle_backend("ddxplus8", anchor=6, tag="b")]
    with Store(path) as store:
        assert run_clinical(store, spec, backends=members).complete
    return path


def _examples_expander(at: AppTest):  # type: ignore[no-untyped-def]
    found = [e for e in at.expander if e.label.startswith("Solved examples in the agents' prompts")]
    assert len(found) <= 1
    return found[0] if found else None


def test_walkthrough_shows_each_few_shot_agents_examples(few_shot_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(few_shot_db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    run, case = at.selectbox(key="run_id").value, at.selectbox(key="walk_case").value
    box = _examples_expander(at)
    assert box is not None and box.label.endswith("(round 1)")
    assert any(c.value == EXAMPLES_NOTE for c in box.caption)
    assert "calibration" in EXAMPLES_NOTE and "test cases are never shown" in EXAMPLES_NOTE
    heads = [m.value for m in box.markdown]
    assert heads == [f"**Agent B** (k = {K})", f"**Agent C** (k = {K})"]  # Agent A is the statistical agent
    tables = [d.value for d in box.dataframe]
    assert len(tables) == 2 and all(list(t.columns) == EXAMPLE_TABLE_COLUMNS for t in tables)

    cal, test, _ = load_dataset("ddxplus8").split(0, N_CAL, N_TEST)
    cal_ids, test_ids, labels = {c.source_id for c in cal}, {c.source_id for c in test}, load_dataset("ddxplus8").labels
    with Store(few_shot_db) as store:
        stored = turn_examples(store, run, case, "dcem")
    for agent, table in zip((1, 2), tables):
        assert table["rank"].tolist() == list(range(1, K + 1))
        assert set(table["example case"]) <= cal_ids and not set(table["example case"]) & test_ids
        assert set(table["true category"]) <= set(labels) and (table["BM25 score"] >= 0).all()
        assert table["truncated"].dtype == bool
        mine = stored[(stored["round"] == 1) & (stored["agent"] == agent)].sort_values("rank")
        assert table["example case"].tolist() == mine["source_id"].tolist()
        assert table["true category"].tolist() == mine["label_name"].tolist()
    truth = {c.source_id: labels[c.label] for c in cal}
    assert all(truth[i] == c for t in tables for i, c in zip(t["example case"], t["true category"]))

    at.button[1].click().run()  # Next: round 2's prompts (with the mediator note) and their examples
    assert not at.exception
    box = _examples_expander(at)
    assert box is not None and box.label.endswith("(round 2)") and len(box.dataframe) == 2


def test_no_examples_section_without_few_shot(clinical_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(clinical_db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception and at.selectbox(key="walk_case").value
    assert _examples_expander(at) is None


def test_agent_examples_shapes_one_round_and_says_when_none_fit() -> None:
    import pandas as pd

    rows = [{"method": "dcem", "round": r, "agent": 0, "shown": s, "rank": 3 - s, "source_id": f"x{r}{s}",
             "label": s, "label_name": None, "score": 1.23456 * s, "truncated": s == 1, "chars": 100}
            for r in (1, 2) for s in (1, 2)]
    views = agent_examples(pd.DataFrame(rows, columns=EXAMPLE_COLUMNS), {0: 3, 1: 2}, {0: "Agent A"},
                           ["L0", "L1", "L2"], 2)
    first, second = views
    assert first.name == "Agent A" and first.table["rank"].tolist() == [1, 2]
    assert first.table["example case"].tolist() == ["x22", "x21"]
    assert first.table["true category"].tolist() == ["L2", "L1"]
    assert first.table["BM25 score"].tolist() == [2.469, 1.235] and first.table["truncated"].tolist() == [False, True]
    assert first.caption.startswith("2 of the 3 requested") and "1 cut short" in first.caption
    assert second.name == "Agent 2" and second.table.empty and "No example is recorded" in second.caption


def test_an_exported_few_shot_run_shows_its_examples_without_a_call_log(
        few_shot_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The export keeps each turn's examples (read from the call log); imported into a store
    with no call log, the walkthrough shows the same examples."""
    from dcem.store.run_import import import_run_export
    from dcem_clinical.cli import main as clinical_main

    with Store(few_shot_db) as store:
        run = store.con.execute("SELECT run_id FROM runs").fetchone()[0]
        cases = [r[0] for r in store.con.execute("SELECT case_id FROM cases WHERE run_id = ? ORDER BY case_id",
                                                 [run]).fetchall()]
        native = {c: turn_examples(store, run, c) for c in cases}
    out = tmp_path / "export"
    assert clinical_main(["export", "--db", str(few_shot_db), "--run", run, "--out", str(out),
                          "--command", "python -m dcem_clinical run ..."]) == 0
    imported = tmp_path / "imported.duckdb"
    with Store(imported) as store:
        assert import_run_export(store, out) == [run]
        assert store.con.execute("SELECT count(*) FROM information_schema.tables "
                                 "WHERE table_name = 'llm_calls'").fetchone()[0] == 0
        from dcem_clinical.informed import run_has_examples
        assert run_has_examples(store, run)
        for case in cases:
            got = turn_examples(store, run, case)
            assert len(got) and got.equals(native[case]), case
    monkeypatch.setenv("DCEM_DB", str(imported))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    box = _examples_expander(at)
    assert box is not None and len(box.dataframe) == 2
    assert all(len(d.value) == K for d in box.dataframe)


def test_a_run_imported_without_its_examples_says_so(few_shot_db: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An export made without the examples (as before exports kept them): the walkthrough
    says the store lacks them instead of blaming the case or the call."""
    from studio.views.few_shot_view import NOT_STORED_NOTE
    from dcem.store.run_export import write_run_export
    from dcem.store.run_import import import_run_export
    from dcem_clinical.informed import run_has_examples

    with Store(few_shot_db) as store:
        run = store.con.execute("SELECT run_id FROM runs").fetchone()[0]
        assert run_has_examples(store, run)
        write_run_export(store, [run], tmp_path / "bare", command="c", models=[])
    imported = tmp_path / "bare.duckdb"
    with Store(imported) as store:
        import_run_export(store, tmp_path / "bare")
        assert not run_has_examples(store, run)
    monkeypatch.setenv("DCEM_DB", str(imported))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    box = _examples_expander(at)
    assert box is not None and not box.dataframe
    assert [i.value for i in box.info] == [NOT_STORED_NOTE]
