"""Case walkthrough: the clickable case table and deep links (?run=&method=&case=&round=)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.views.walkthrough import case_list
from studio.views.walkthrough_nav import CASE_TABLE_COLUMNS
from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "walkthrough.py")


def _page(db: Path, monkeypatch: pytest.MonkeyPatch, **params: str) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = value
    return at


def _link_warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("The link asks for")]


def _long_case(db: Path, method: str = "dcem_noesc") -> tuple[str, int]:
    with Store(db) as store:
        cases = case_list(store, "ui-run", method)
    row = cases[cases["rounds"] >= 4].iloc[-1]
    return str(row["case_id"]), int(row["rounds"])


def test_clicking_a_row_opens_its_case(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _page(run_db, monkeypatch).run()
    table = next(d.value for d in at.dataframe if list(d.value.columns) == CASE_TABLE_COLUMNS)
    ids = table["case"].tolist()
    assert at.selectbox(key="walk_case").value == ids[0] and len(ids) == 48
    assert table["final energy"].notna().all() and set(table["escalated"]) == {True, False}
    at.session_state["walk_table"] = {"selection": {"rows": [5], "columns": []}}
    at.run()
    assert not at.exception and at.selectbox(key="walk_case").value == ids[5]
    assert at.subheader[0].value.startswith("Round 1 of ")
    at.selectbox(key="walk_case").set_value(ids[2]).run()  # the table still holds row 5 selected
    assert at.selectbox(key="walk_case").value == ids[2]
    at.checkbox[1].check().run()  # a filter: the table lists the escalated cases only
    shown = next(d.value for d in at.dataframe if list(d.value.columns) == CASE_TABLE_COLUMNS)
    assert shown["escalated"].all() and len(shown) < len(ids)


def test_a_deep_link_opens_method_case_and_round(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case, rounds = _long_case(run_db)
    at = _page(run_db, monkeypatch, run="ui-run", method="dcem_noesc", case=case, round="3").run()
    assert not at.exception and _link_warnings(at) == []
    assert at.radio(key="walk_method").value == "dcem_noesc" and at.selectbox(key="walk_case").value == case
    assert at.subheader[0].value.startswith(f"Round 3 of {rounds}")
    assert at.code[0].value == f"?run=ui-run&method=dcem_noesc&case={case}&round=3"
    assert at.query_params == {"run": "ui-run", "method": "dcem_noesc", "case": case, "round": "3"}
    at.button[1].click().run()  # Next: the link is not applied again, the address follows the view
    assert at.subheader[0].value.startswith(f"Round 4 of {rounds}")
    assert at.query_params["round"] == "4" and at.code[0].value.endswith("&round=4")


def test_a_link_switches_the_run(clinical_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case, _ = _long_case(clinical_db, "dcem")
    at = _page(clinical_db, monkeypatch, run="ui-run", case=case, round="2").run()
    assert not at.exception and _link_warnings(at) == []
    assert at.selectbox(key="run_id").value == "ui-run" and at.radio(key="walk_method").value == "dcem"
    assert at.selectbox(key="walk_case").value == case and at.subheader[0].value.startswith("Round 2 of ")


@pytest.mark.parametrize("params, says", [
    ({"run": "no-such-run"}, "The link asks for run 'no-such-run', which is not available here; showing 'ui-run'"),
    ({"run": "ui-run", "method": "magic"}, "The link asks for method 'magic'"),
    ({"run": "ui-run", "case": "no-such-case", "round": "2"}, "The link asks for case 'no-such-case'"),
    ({"run": "ui-run", "round": "two"}, "The link asks for round 'two', which is not a round number; showing round 1."),
])
def test_a_bad_link_says_so_and_shows_a_valid_view(run_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                    params: dict[str, str], says: str) -> None:
    at = _page(run_db, monkeypatch, **params).run()
    assert not at.exception and not at.error
    warnings = _link_warnings(at)
    assert len(warnings) == 1 and warnings[0].startswith(says)
    assert at.selectbox(key="run_id").value == "ui-run" and at.radio(key="walk_method").value == "dcem"
    assert at.subheader[0].value.startswith("Round ")
    assert at.query_params["run"] == "ui-run" and at.query_params["case"] == at.selectbox(key="walk_case").value


def test_a_round_beyond_the_case_shows_its_last_round(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case, rounds = _long_case(run_db, "dcem")
    at = _page(run_db, monkeypatch, run="ui-run", method="dcem", case=case, round="99").run()
    assert _link_warnings(at) == [f"The link asks for round 99, but this case has rounds 1 to {rounds}; "
                                  f"showing round {rounds}."]
    assert at.subheader[0].value.startswith(f"Round {rounds} of {rounds}")
    at.run()  # the warning was about the link; the view it fell back to stays
    assert _link_warnings(at) == [] and at.subheader[0].value.startswith(f"Round {rounds} of {rounds}")


def test_a_link_resets_the_filters_so_its_case_is_listed(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(run_db) as store:
        cases = case_list(store, "ui-run", "dcem")
    decided = str(cases[~cases["escalated"]]["case_id"].iloc[0])
    at = _page(run_db, monkeypatch).run()
    at.checkbox[1].check().run()  # escalated only: the decided case is not listed
    at.query_params.update({"run": "ui-run", "method": "dcem", "case": decided, "round": "1"})
    at.run()
    assert _link_warnings(at) == [] and at.selectbox(key="walk_case").value == decided
    assert not at.checkbox[1].value
