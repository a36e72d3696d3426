"""The browser tests' stable click (tests/e2e/stable.py), on small pages of its own: it
waits while a script runs or the page keeps changing, and clicks a button that was
re-rendered again and again once the page holds still, exactly once."""
from __future__ import annotations

import pytest

from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow

RUNNING = '<div data-testid="stStatusWidget"><div data-testid="stStatusWidgetRunningIcon">Running...</div></div>'
REPLACED = """<div id="box"></div><p id="count">0</p><script>
  let left = 20;  // re-render the button 20 times, 50 ms apart, then let it be
  function render() {
    const b = document.createElement('button');
    b.textContent = 'Go';
    b.onclick = () => { const c = document.getElementById('count'); c.textContent = String(+c.textContent + 1); };
    document.getElementById('box').replaceChildren(b);
    if (--left > 0) setTimeout(render, 50);
  }
  render();
</script>"""


def test_a_running_app_is_not_idle_and_a_finished_one_is(chromium) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = chromium.new_page()
    try:
        page.set_content(f"<body>{RUNNING}<p>page</p></body>")
        with pytest.raises(PlaywrightTimeout):
            app_idle(page, timeout=1_500)  # the running icon never goes away here
        page.evaluate("document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]').remove()")
        app_idle(page, timeout=60_000)
    finally:
        page.close()


def test_a_page_that_keeps_changing_is_not_idle(chromium) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = chromium.new_page()
    try:
        page.set_content("<body><p id='t'>0</p><script>setInterval(() => {"
                         "document.getElementById('t').textContent = String(Math.random()); }, 100);</script></body>")
        with pytest.raises(PlaywrightTimeout):
            app_idle(page, timeout=1_500)
    finally:
        page.close()


def test_a_re_rendered_button_is_clicked_once_it_holds_still(chromium) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page()
    try:
        page.set_content(f"<body>{REPLACED}</body>")
        click(page, page.get_by_role("button", name="Go"))
        assert page.locator("#count").inner_text() == "1"
        assert page.evaluate("left") == 0  # it clicked after the last re-render
    finally:
        page.close()


def test_the_sessions_pages_wait_longer_than_playwrights_30_s(chromium) -> None:  # type: ignore[no-untyped-def]
    """Every page and context the tests open gets the longer default waits."""
    from tests.e2e.stable import ACTION_MS, NAVIGATION_MS, PatientBrowser

    class Recorder:
        def __init__(self) -> None:
            self.set: dict[str, float] = {}

        def set_default_timeout(self, ms: float) -> None:
            self.set["action"] = ms

        def set_default_navigation_timeout(self, ms: float) -> None:
            self.set["navigation"] = ms

    class Fake:
        version = "fake"

        def new_page(self, **options: object) -> Recorder:
            return Recorder()

        def new_context(self, **options: object) -> Recorder:
            return Recorder()

    assert isinstance(chromium, PatientBrowser) and ACTION_MS >= 60_000 and NAVIGATION_MS >= 120_000
    wrapped = PatientBrowser(Fake())
    want = {"action": ACTION_MS, "navigation": NAVIGATION_MS}
    assert wrapped.new_page().set == want and wrapped.new_context().set == want and wrapped.version == "fake"
