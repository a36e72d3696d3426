"""In Chromium, the what-if page's loss on the featured views run (issue 51, item 12):
``abc`` in l_high is refused and the field keeps 5; the high-risk classes survive
l_high = 1 and l_high = 50 then rewrites the matrix; raising l_high says the thresholds
were fitted under another loss and the refit changes the escalated share; Reset brings
back 5 (a refused cell of the loss editor gone after Reset: tests/app/test_whatif_loss_fields.py).  Every step waits
for a stable page (no script running, nothing changing), never a fixed time."""
from __future__ import annotations

import re
from typing import Iterator

import pytest
from playwright.sync_api import expect

from dcem.store.database import Store
from dcem.store.demo import FEATURED_RUN, VIEWS_EXPORT, ensure_demo
from tests.e2e.conftest import serve_dashboard
from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow

HIGH_RISK = ["Anaphylaxis", "Pulmonary_embolism", "NSTEMI_STEMI", "Myocarditis"]


@pytest.fixture(scope="module")
def views_url(tmp_path_factory: pytest.TempPathFactory, chromium: object) -> Iterator[str]:
    db = tmp_path_factory.mktemp("e2e-views") / "views.duckdb"
    with Store(db) as store:
        assert FEATURED_RUN in ensure_demo(store, (VIEWS_EXPORT,))
    yield from serve_dashboard(db, tmp_path_factory.mktemp("e2e-views-log"))


def _type(page, field, text: str, until: str) -> None:  # type: ignore[no-untyped-def]
    """Type ``text`` into the l_high field and send it, then wait for the text ``until``
    (what the page shows once the rerun took the value; the rerun may start late on a
    busy machine) and for the page to settle."""
    app_idle(page)
    field.fill(text)
    field.press("Enter")
    page.get_by_text(until, exact=False).first.wait_for(timeout=120_000)
    app_idle(page)


def _chips(page) -> list[str]:  # type: ignore[no-untyped-def]
    """The chosen classes: the multiselect's tags (``[data-tag]``, whose title is the class),
    also where Streamlit keeps them in a ``template`` element's content."""
    box = page.locator('[data-testid="stMultiSelect"]', has_text="High-risk classes").first
    return list(box.evaluate("""el => {
        const roots = [el, ...Array.from(el.querySelectorAll('template')).map(t => t.content)];
        const seen = roots.flatMap(r => Array.from(r.querySelectorAll('[data-tag] span[title]')));
        return [...new Set(seen.map(s => s.getAttribute('title')))];
    }"""))


def _escalated(page) -> str:  # type: ignore[no-untyped-def]
    card = page.locator('[data-testid="stMetric"]', has_text="Escalated").first
    return card.locator('[data-testid="stMetricValue"]').inner_text()


def _errors(page) -> str:  # type: ignore[no-untyped-def]
    return " ".join(e.inner_text() for e in page.locator('[data-testid="stAlertContentError"]').all())


def test_l_high_refuses_text_keeps_the_classes_and_offers_a_refit(chromium, views_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{views_url}/whatif")
    page.get_by_text("Metrics over", exact=False).first.wait_for(timeout=120_000)
    app_idle(page)
    field = page.get_by_role("textbox", name="l_high")
    expect(field).to_have_value("5", timeout=120_000)  # retried until the field is drawn with the run's value
    assert _chips(page) == HIGH_RISK

    _type(page, field, "abc", "is not a number")
    assert "l_high: 'abc' is not a number" in _errors(page) and "It stays 5." in _errors(page)
    expect(field).to_have_value("5", timeout=60_000)  # the value in force, not 0
    assert page.get_by_text("Nothing changed", exact=False).count() == 1

    _type(page, field, "1", "no high-risk class (every miss costs 1)")
    expect(field).to_have_value("1", timeout=60_000)
    assert _chips(page) == HIGH_RISK  # kept, though every miss now costs 1
    _type(page, field, "50", "l_high = 50")
    note = page.get_by_text("Loss matrix set for every cell", exact=False).first.inner_text()
    assert "l_high = 50" in note and "Anaphylaxis" in note  # 50 took effect on the kept classes
    shot(page, "l_high-50")

    _type(page, field, "10", "under the run's own loss matrix")
    warning = page.get_by_text("were fitted by eq. (1) under the run's own loss matrix", exact=False)
    assert warning.count() == 1
    before = _escalated(page)
    click(page, page.get_by_text("Refit the thresholds for this loss"))
    page.get_by_text("Thresholds refitted by eq. (1)", exact=False).first.wait_for(timeout=120_000)
    app_idle(page)
    refit = page.get_by_text("Thresholds refitted by eq. (1)", exact=False).first.inner_text()
    assert "held-out cases): escalated" in refit and "store keeps only TEST trajectories" in refit
    after = _escalated(page)
    assert re.fullmatch(r"\d+\.\d%", after) and after != before, (before, after)
    shot(page, "l_high-10-refit")

    click(page, page.get_by_role("button", name="Reset to run settings"))
    page.get_by_text("are back to the run's own", exact=False).first.wait_for(timeout=60_000)
    app_idle(page)
    expect(field).to_have_value("5", timeout=60_000)
    assert page.get_by_text("Nothing changed", exact=False).count() == 1
    _type(page, field, "4", "l_high = 4")  # the next change after Reset starts from the run's matrix
    assert "too large" not in _errors(page)
    assert "l_high = 4" in page.get_by_text("Loss matrix set for every cell", exact=False).first.inner_text()
    shot(page, "after-reset")
    page.close()
