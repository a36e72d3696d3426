"""Clicks that wait for a stable page.  On a busy machine a Streamlit page keeps
re-rendering while its script runs: Playwright's click then waits for an element that is
replaced again and again, and times out.  :func:`app_idle` waits until the app is not
running (its "Running..." status widget gone) and the page has not changed for a moment;
:func:`click` waits for that, for the element to be visible, and clicks, again after the
next quiet moment if the element was replaced (detached) or never held still."""
from __future__ import annotations

from typing import Any

__all__ = ["QUIET_MS", "ACTION_MS", "NAVIGATION_MS", "PatientBrowser", "app_idle", "click"]

QUIET_MS = 500
"""How long the page must stay unchanged, with no script running, to count as stable."""
ACTION_MS = 60_000
NAVIGATION_MS = 120_000
"""Default waits of every page the tests open (Playwright's own are 30 s, which a loaded
machine exceeds when it opens a dashboard page): waits, not speed checks."""


class PatientBrowser:
    """The session's browser, whose pages and contexts wait :data:`ACTION_MS` for an action
    and :data:`NAVIGATION_MS` for a navigation unless a call says otherwise."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_page(self, **options: Any) -> Any:
        page = self._browser.new_page(**options)
        page.set_default_timeout(ACTION_MS)
        page.set_default_navigation_timeout(NAVIGATION_MS)
        return page

    def new_context(self, **options: Any) -> Any:
        context = self._browser.new_context(**options)
        context.set_default_timeout(ACTION_MS)
        context.set_default_navigation_timeout(NAVIGATION_MS)
        return context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)

_IDLE = """(quiet) => {
  const w = window;
  if (!w.__dcemQuiet) {  // installed once per page load: the time of the last change
    w.__dcemQuiet = {last: Date.now()};
    new MutationObserver(() => { w.__dcemQuiet.last = Date.now(); })
      .observe(document.body, {subtree: true, childList: true, characterData: true});
  }
  // the status widget's "Running..." icon (not its other notes, such as a changed source file)
  if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"]') !== null) {
    w.__dcemQuiet.last = Date.now();
    return false;
  }
  return Date.now() - w.__dcemQuiet.last >= quiet;
}"""


def app_idle(page: Any, *, timeout: float = 120_000, quiet_ms: int = QUIET_MS) -> None:
    """Wait until no script runs and the page has not changed for ``quiet_ms``."""
    page.wait_for_function(_IDLE, arg=quiet_ms, timeout=timeout, polling=100)


def click(page: Any, target: Any, *, idle: bool = True, attempts: int = 4, timeout: float = 30_000,
          **options: Any) -> None:
    """Click the locator ``target`` once the page is stable (``idle=False``: without waiting
    for the app to stop running, for a control pressed during a run such as Stop), retrying
    when the element was replaced or never held still; the last failure is raised."""
    from playwright.sync_api import Error

    for attempt in range(attempts):
        try:
            if idle:
                app_idle(page)
            target.wait_for(state="visible", timeout=timeout)
            target.click(timeout=timeout, **options)
            return
        except Error:  # detached, re-rendered or hidden meanwhile (TimeoutError is an Error too)
            if attempt == attempts - 1:
                raise
