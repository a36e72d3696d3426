"""End to end on the shipped demo data: a first visit's walkthrough, what-if and review
pages open on the views grid's DDXPlus-8 run, whose D-CEM certifies, steers and escalates
cases side by side."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from dcem.store.database import Store
from dcem.store.demo import FEATURED_RUN, ensure_demo
from tests.e2e.conftest import serve_dashboard
from tests.e2e.test_browser import settled

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory, chromium: object) -> Iterator[str]:
    db = tmp_path_factory.mktemp("e2e-demo") / "demo.duckdb"
    with Store(db) as store:
        assert FEATURED_RUN in ensure_demo(store)
    yield from serve_dashboard(db, tmp_path_factory.mktemp("e2e-demo-log"))


def _run_box(page) -> str:  # type: ignore[no-untyped-def]
    """The run picker's shown value (the run's label)."""
    box = page.locator('[data-testid="stSelectbox"]', has_text="Run").first
    return str(box.locator("input").first.get_attribute("value"))


def _options(page, label: str) -> list[str]:  # type: ignore[no-untyped-def]
    page.locator('[data-testid="stMultiSelect"]', has_text=label).first.click()
    page.get_by_role("option").first.wait_for(timeout=10_000)
    names = [o.inner_text().strip() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return names


def _open(page, url: str, ready: str) -> None:  # type: ignore[no-untyped-def]
    """Go to ``url``, wait for the text ``ready`` and the charts, check the featured run is picked."""
    page.goto(url)
    page.get_by_text(ready, exact=False).wait_for(timeout=60_000)
    settled(page)
    assert FEATURED_RUN in _run_box(page)


def test_the_walkthrough_opens_on_the_views_grid(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1400})
    _open(page, f"{demo_url}/walkthrough", "Round 1 of")
    assert "Clinical run on ddxplus8" in page.locator('[data-testid="stMain"]').inner_text()
    outcomes = _options(page, "Outcome")
    assert {"STOP_AND_DECIDE", "STOP_AND_ESCALATE"} <= set(outcomes), outcomes
    shot(page, "walkthrough")
    page.close()


def test_the_whatif_and_review_pages_open_on_it_too(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1600})
    _open(page, f"{demo_url}/whatif", "Metrics over")
    card = page.locator('[data-testid="stMetric"]', has_text="Certified").first
    certified = float(card.locator('[data-testid="stMetricValue"]').inner_text().rstrip("%"))
    assert 0.2 < (certified / 100 if certified > 1 else certified) < 0.95, certified
    shot(page, "whatif")
    page.goto(f"{demo_url}/review")
    page.get_by_text("Why it escalated", exact=False).wait_for(timeout=60_000)
    assert FEATURED_RUN in _run_box(page)
    shot(page, "review")
    page.close()
