"""The Group evaluation page's view-group panel on the shipped exports: the featured group's
rows (members alone, their vote, the group, references) and what the debate changed, from a
store that imported the shipped view-group runs; a store without them says how to get them."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from sag.store.tables import SagStore
from sag.views.featured import FEATURED, SHIPPED, ensure_featured
from studio.sag_eval_session import EXPORTS_KEY

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "sag_evaluation.py")


def _page(monkeypatch: pytest.MonkeyPatch, db: Path, tmp_path: Path) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state[EXPORTS_KEY] = str(tmp_path)
    return at


def test_the_panel_shows_the_featured_groups_rows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "sag.duckdb"
    with SagStore(db) as store:
        assert ensure_featured(store) > 0  # every shipped view group's export
        groups = set(store.runs()["group_name"])
    assert {s.name for s in SHIPPED} <= groups
    at = _page(monkeypatch, db, tmp_path).run()
    assert not at.exception and not at.error
    assert any(FEATURED.name in m.value and FEATURED.group in m.value for m in at.markdown)
    rows = next(d.value for d in at.dataframe if "answers" in d.value.columns)
    assert "the group (debate and judge)" in list(rows["answers"])
    assert any(name.endswith("alone (history)") for name in rows["answers"])
    assert rows["accuracy"].between(0, 1).all()
    changes = next(d.value for d in at.dataframe if "wrong to right" in d.value.columns)
    assert list(changes["member"]) == ["R1", "R2", "R3"]
    assert any("Counterfactual divergence with the sex changed" in m.value for m in at.markdown)


def test_a_store_without_the_view_group_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _page(monkeypatch, tmp_path / "empty.duckdb", tmp_path).run()
    assert not at.exception
    assert any(f"Import {FEATURED.export}" in i.value and FEATURED.group in i.value for i in at.info)
