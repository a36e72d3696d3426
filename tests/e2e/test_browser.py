"""End to end in a real browser: walk through a case round by round."""
from __future__ import annotations

import pytest

from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow


def settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until both charts have drawn, the script run has finished and the page holds still."""
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2",
                           timeout=60_000)
    app_idle(page)


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
    click(page, page.get_by_role("button", name="Next ▶"))
    page.get_by_text("Round 2 of", exact=False).wait_for(timeout=30_000)
    click(page, page.get_by_text("Reveal the ground truth", exact=False))
    page.get_by_text("True label:", exact=False).wait_for(timeout=30_000)
    settled(page)
    path = shot(page, "round2")
    assert path.stat().st_size > 10_000
    page.close()


def _metric_value(page, label: str) -> str:  # type: ignore[no-untyped-def]
    card = page.locator('[data-testid="stMetric"]', has_text=label).first
    return card.locator('[data-testid="stMetricValue"]').inner_text()


def test_change_a_threshold(browser, app_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(f"{app_url}/whatif")
    page.get_by_text("Metrics over", exact=False).wait_for(timeout=60_000)
    settled(page)
    before = _metric_value(page, "Certified")
    shot(page, "before")
    slider = page.get_by_role("slider", name="m_safe")
    slider.focus()
    page.keyboard.press("End")  # the largest margin requirement: nothing can be certified
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stMetric"]')]
               .some(m => m.innerText.includes('Certified')
                          && m.querySelector('[data-testid="stMetricValue"]').innerText === '0.0%')""",
        timeout=30_000)
    settled(page)
    assert before != "0.0%"
    assert _metric_value(page, "Certified") == "0.0%"  # shares in percent
    shot(page, "after")
    page.close()


def _review(page, reviewer: str, comment: str) -> None:  # type: ignore[no-untyped-def]
    click(page, page.locator('[data-testid="stSelectbox"]', has_text="Final label"))  # no label is pre-selected
    page.keyboard.press("ArrowDown")  # a click focuses the box; the arrow opens its list
    click(page, page.get_by_role("option").first)
    page.get_by_label("Comment").fill(comment)
    page.get_by_label("Reviewer").fill(reviewer)


def test_two_sessions_record_reviews_at_once(browser, app_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1600}) for _ in range(2)]
    pages = [c.new_page() for c in contexts]
    for i, page in enumerate(pages):
        page.goto(f"{app_url}/review")
        page.get_by_text("Why it escalated", exact=False).wait_for(timeout=60_000)
        settled(page)
        _review(page, f"reviewer {i + 1}", f"comment from session {i + 1}")
    buttons = [p.get_by_role("button", name="Record review") for p in pages]
    for page, button in zip(pages, buttons):  # both submits go out before either answer is awaited
        click(page, button, no_wait_after=True)
    for page in pages:
        page.get_by_text("recorded.", exact=False).wait_for(timeout=30_000)
    shot(pages[0], "session1")
    pages[1].reload()
    pages[1].get_by_text("History of this case", exact=False).wait_for(timeout=60_000)
    settled(pages[1])
    text = pages[1].locator('[data-testid="stMain"]').inner_text()
    shot(pages[1], "history")
    history = pages[1].locator('[data-testid="stDataFrame"]').last
    assert history.is_visible()
    for c in contexts:
        c.close()
    assert "History of this case: 2 review(s)" in text  # neither concurrent review was lost
    assert "reviewer 1" in text and "reviewer 2" in text
