"""The shipped informative-panel exports in the dashboard: the Overview lists their runs,
and the walkthrough opens a certified, a steered and an escalated case of them, each
with what the mediator did in words."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS, PANEL_EXPORTS
from dcem.store.run_export import load_run_export
from dcem.store.run_import import import_run_export

ROOT = Path(__file__).resolve().parents[2]


CASES = {  # kind -> (query for (run, case, round), the notice's kind, what it says)
    "certified": ("SELECT run_id, case_id, rounds FROM outcomes WHERE method = 'dcem' AND action = 'STOP_AND_DECIDE' "
                  "AND certified ORDER BY run_id, case_id LIMIT 1", "success", "(certified)."),
    "steered": ("SELECT t.run_id, t.case_id, t.round FROM traces t JOIN outcomes o USING (run_id, case_id, method) "
                "WHERE t.method = 'dcem' AND t.action = 'DIFFERENTIAL_STEER' AND t.round <= o.rounds "
                "ORDER BY t.run_id, t.case_id, t.round LIMIT 1", "warning", "Challenge to Agent"),
    "escalated": ("SELECT run_id, case_id, rounds FROM outcomes WHERE method = 'dcem' "
                  "AND action = 'STOP_AND_ESCALATE' ORDER BY run_id, case_id LIMIT 1", "error",
                  "Escalated: the case goes to a human reviewer"),
}


@pytest.fixture(scope="module")
def panels_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, str, int]]]:
    """The panel exports imported into a store, and per kind of case the first one:
    (run, case, the round that shows it)."""
    path = tmp_path_factory.mktemp("panels") / "panels.duckdb"
    found: dict[str, tuple[str, str, int]] = {}
    with Store(path) as store:
        for directory in PANEL_EXPORTS:
            import_run_export(store, directory)
        for kind, (sql, _, _) in CASES.items():
            row = store.con.execute(sql).fetchone()
            assert row is not None, f"the panel exports hold no {kind} case"
            found[kind] = (str(row[0]), str(row[1]), int(row[2]))
    return path, found


def test_the_panel_exports_ship_with_the_demo() -> None:
    assert PANEL_EXPORTS and set(PANEL_EXPORTS) <= set(DEMO_EXPORTS)
    for directory in PANEL_EXPORTS:
        assert load_run_export(directory).run_ids


@pytest.mark.parametrize("kind", list(CASES))
def test_the_walkthrough_opens_a_certified_a_steered_and_an_escalated_case(
        panels_db: tuple[Path, dict[str, tuple[str, str, int]]], monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    _, notice, text = CASES[kind]
    run, case, rnd = panels_db[1][kind]
    monkeypatch.setenv("DCEM_DB", str(panels_db[0]))
    at = AppTest.from_file(str(ROOT / "pages" / "walkthrough.py"), default_timeout=120).run()
    at.selectbox(key="run_id").set_value(run).run()
    at.selectbox(key="walk_case").set_value(case).run()
    if rnd > 1:
        at.slider(key="walk_round").set_value(rnd).run()
    assert not at.exception and not any("Traceback" in e.value for e in at.error)
    assert at.subheader[0].value.startswith(f"Round {rnd} of ")
    shown = [n.value for n in getattr(at, notice)]
    assert any(text in value for value in shown), shown
    assert at.expander[0].label.startswith("Case text")


def test_the_overview_lists_the_panel_runs(panels_db: tuple[Path, dict[str, tuple[str, str, int]]],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(panels_db[0]))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    runs = set(at.dataframe[-1].value["run_id"])
    assert runs == {r for d in PANEL_EXPORTS for r in load_run_export(d).run_ids}


def test_the_walkthrough_shows_the_few_shot_examples_of_a_shipped_pair_case(
        panels_db: tuple[Path, dict[str, tuple[str, str, int]]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A shipped panel run with retrieval few-shot carries each turn's solved CAL examples,
    so the walkthrough of the imported run (no call log) shows them per LLM agent."""
    few_shot = [(e.run(r)["spec"]["few_shot_k"], r) for e in map(load_run_export, PANEL_EXPORTS)
                for r in e.run_ids if e.run(r)["spec"].get("few_shot_k")]
    assert few_shot, "no shipped panel run used retrieval few-shot"
    k, run = few_shot[0]
    with Store(panels_db[0]) as store:
        case = store.con.execute("SELECT min(case_id) FROM cases WHERE run_id = ?", [run]).fetchone()[0]
        test_sources = {str(r[0]) for r in store.con.execute(  # the TEST cases of the case's cell
            "SELECT t.source_id FROM case_texts t JOIN cases c USING (run_id, case_id) "
            "JOIN cases o ON o.run_id = c.run_id AND o.scenario = c.scenario AND o.seed = c.seed "
            "WHERE o.run_id = ? AND o.case_id = ?", [run, case]).fetchall()}
    assert test_sources
    monkeypatch.setenv("DCEM_DB", str(panels_db[0]))
    at = AppTest.from_file(str(ROOT / "pages" / "walkthrough.py"), default_timeout=120).run()
    at.selectbox(key="run_id").set_value(run).run()
    at.selectbox(key="walk_case").set_value(case).run()
    assert not at.exception
    boxes = [e for e in at.expander if e.label.startswith("Solved examples in the agents' prompts")]
    assert len(boxes) == 1 and len(boxes[0].dataframe) == 2
    assert all(len(d.value) == k and d.value["rank"].tolist() == list(range(1, k + 1)) for d in boxes[0].dataframe)
    shown = {str(c) for d in boxes[0].dataframe for c in d.value["example case"]}
    assert shown and not shown & test_sources  # solved CAL cases only, never a TEST case


def test_the_run_captions_name_few_shot_and_stopping(panels_db: tuple[Path, dict[str, tuple[str, str, int]]]) -> None:
    from dcem.analysis.run_info import describe_run

    seen = set()
    with Store(panels_db[0]) as store:
        for export in map(load_run_export, PANEL_EXPORTS):
            for run in export.run_ids:
                spec, text = export.run(run)["spec"], describe_run(store, run)
                k = spec.get("few_shot_k") or 0
                assert (f"{k} solved CAL cases in each LLM prompt" in text) == (k > 1), text
                assert ("few-shot" in text) == (k > 0), text
                assert ("TEST cases stop when D-CEM decides them" in text) == bool(spec.get("stop_when_decided"))
                seen.add(k > 0)
    assert seen == {True, False}  # the shipped panels hold runs with and without few-shot
