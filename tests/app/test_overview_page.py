"""The placeholder dashboard starts and shows stored runs."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dcem.test_store import fake_result
from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]


def test_app_loads_with_an_empty_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    assert not at.exception
    assert any("not clinical advice" in i.value for i in at.info)
    assert any("No experiment results are stored yet" in i.value for i in at.info)


def test_app_shows_the_latest_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        result = fake_result()
        store.ensure_run("demo-run", kind="synthetic", spec={}, config=result.config, seeds=[0])
        store.save_cell("demo-run", result)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    assert not at.exception
    assert any("demo-run" in s.value for s in at.subheader)
    assert "D-CEM" in at.text[0].value
