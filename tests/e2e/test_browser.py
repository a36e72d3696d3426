"""End to end in a real browser: walk through a case round by round."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the script run has finished and both charts have drawn."""
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2",
                           timeout=30_000)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=30_000)


def test_walk_through_a_case(browser, app_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{app_url}/walkthrough")
    page.get_by_text("Round 1 of", exact=False).wait_for(timeout=30_000)
    assert page.get_by_text("not clinical advice", exact=False).first.is_visible()
    nav = page.locator('[data-testid="stSidebarNav"]')
    assert "Case walkthrough" in nav.inner_text()  # the app's navigation, not the raw folder
    assert "D-CEM Studio" in page.locator('[data-testid="stSidebar"]').inner_text()
    settled(page)
    shot(page, "round1")
    page.get_by_role("button", name="Next ▶").click()
    page.get_by_text("Round 2 of", exact=False).wait_for(timeout=30_000)
    page.get_by_text("Reveal the ground truth", exact=False).click()
    page.get_by_text("True label:", exact=False).wait_for(timeout=30_000)
    settled(page)
    path = shot(page, "round2")
    assert path.stat().st_size > 10_000
    page.close()
