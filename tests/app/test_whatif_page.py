"""What-if page: a threshold change moves the metrics; invalid settings are refused."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.presets import list_presets
from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "whatif.py")


@pytest.fixture()
def page(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, Path]:
    db = tmp_path / "wi.duckdb"
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(PAGE, default_timeout=120), db


def _metric(at: AppTest, name: str) -> float:
    frame = next(d.value for d in at.dataframe if "current" in d.value.columns)
    return float(frame.loc[name, "current"])


def test_threshold_change_moves_the_metrics(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    assert not at.exception and not at.error
    before = _metric(at, "certified_rate")
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    assert not at.exception
    assert _metric(at, "certified_rate") < before or before == 0.0
    at.slider(key="wi_m_safe").set_value(3.0).run()
    assert _metric(at, "certified_rate") == 0.0  # nothing clears a margin of 3 with these losses
    assert len(at.get("plotly_chart")) == 2


def test_invalid_thresholds_are_refused_with_the_field(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    at.slider(key="wi_eps_low").set_value(0.0).run()
    at.slider(key="wi_eps_safe").set_value(1.0).run()
    assert not at.exception
    assert any("eps_safe" in e.value for e in at.error)


def test_loss_preset_rescores_and_settings_save_as_a_preset(page: tuple[AppTest, Path]) -> None:
    at, db = page
    at.run()
    risk_before = _metric(at, "risk")
    at.number_input(key="wi_lhigh").set_value(30.0).run()
    next(b for b in at.button if b.label.startswith("Apply {")).click().run()
    assert not at.exception
    assert _metric(at, "risk") != risk_before  # the new loss re-scored every case
    at.text_input[0].set_value("strict")
    at.button(key="FormSubmitter:wi_save-Save as preset").click().run()
    assert any("Saved preset 'strict'" in s.value for s in at.success)
    with Store(db) as store:
        assert list(list_presets(store)["name"]) == ["strict"]


def test_a_shorter_round_budget_shortens_episodes(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    before = _metric(at, "avg_rounds")
    at.slider(key="wi_t_max").set_value(2).run()
    assert not at.exception
    assert _metric(at, "avg_rounds") <= 2.0 < before
