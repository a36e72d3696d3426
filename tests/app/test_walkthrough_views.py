"""Case walkthrough on the shipped views run (issue 51, item 16): the agent table says
which part of the case each member read (two members of one model, ``stat:nb-evidence``,
differ only by it), and a long class name wraps at its underscore, not mid-word."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.case_reads import case_agents
from dcem.store.database import Store
from dcem.store.demo import FEATURED_RUN, VIEWS_EXPORT, ensure_demo
from studio.turns import label_breaks

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "walkthrough.py")


@pytest.fixture(scope="module")
def views_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("views") / "views.duckdb"
    with Store(path) as store:
        assert FEATURED_RUN in ensure_demo(store, (VIEWS_EXPORT,))
    return path


def test_the_agent_table_shows_what_each_member_read(views_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(views_db))
    monkeypatch.setenv("DCEM_DEMO", "0")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert FEATURED_RUN in str(at.selectbox(key="run_id").value)
    agents = next(d.value for d in at.dataframe if "agent" in d.value.columns and "role" in d.value.columns)
    assert list(agents["model"]) == ["stat:nb-evidence", "stat:nb-evidence"]  # the same model twice ...
    assert list(agents["view"]) == ["@complaint", "@history"]  # ... told apart by the part each read
    labels = [m.value for m in at.markdown if "round-label" in m.value]
    assert len(labels) == 2 and not any("overflow-wrap:anywhere" in m for m in labels)
    assert all("overflow-wrap:break-word" in m for m in labels)


def test_case_agents_read_the_view_of_each_member(views_db: Path) -> None:
    with Store(views_db, read_only=True) as store:
        case = store.con.execute("SELECT case_id FROM cases WHERE run_id = ? LIMIT 1", [FEATURED_RUN]).fetchone()[0]
        agents = case_agents(store, FEATURED_RUN, case)
    assert list(agents["view"]) == ["complaint", "history"]


def test_a_class_name_breaks_after_its_underscores_only() -> None:
    assert label_breaks("Pulmonary_embolism") == "Pulmonary_<wbr>embolism"
    assert label_breaks("NSTEMI_STEMI") == "NSTEMI_<wbr>STEMI" and label_breaks("URTI") == "URTI"
    assert label_breaks("<b>") == "&lt;b&gt;"  # escaped, never markup
