"""End to end on the shipped demo data: a first visit's walkthrough, what-if and review
pages open on the views grid's DDXPlus-8 run, whose D-CEM certifies, steers and escalates
cases side by side."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest
from playwright.sync_api import expect

from dcem.store.database import Store
from dcem.store.demo import FEATURED_RUN, TRIO_EXPORT, ensure_demo
from dcem.store.run_export import load_run_export
from tests.e2e.conftest import serve_dashboard
from tests.e2e.test_browser import settled
from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow
TRIO_RUN = load_run_export(TRIO_EXPORT).run_ids[0]  # the panel of three


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
    click(page, page.locator('[data-testid="stMultiSelect"]', has_text=label).first)
    page.get_by_role("option").first.wait_for(timeout=10_000)
    names = [o.inner_text().strip() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return names


def _tradeoff_inside(page) -> bool:  # type: ignore[no-untyped-def]
    """The trade-off chart's axes hold shares within 0-100 % and every point is inside them."""
    find = ("Array.from(document.querySelectorAll('.js-plotly-plot')).find(p => p._fullLayout && "
            "p._fullLayout.title && String(p._fullLayout.title.text).includes('Escalated vs'))")
    page.wait_for_function(f"() => !!({find})", timeout=60_000)
    box = page.evaluate(f"""() => {{ const p = {find};
      return {{x: p._fullLayout.xaxis.range, y: p._fullLayout.yaxis.range,
              points: p._fullData.flatMap(t => Array.from(t.x || []).map((x, i) => [x, t.y[i]]))
                .filter(q => q[0] !== null && q[0] !== undefined)}}; }}""")
    (x0, x1), (y0, y1) = box["x"], box["y"]
    assert -0.05 <= x0 and x1 <= 1.05 and y0 == 0 and y1 <= 1.0, box
    return all(x0 <= x <= x1 and y0 <= y <= y1 for x, y in box["points"])


def _open(page, url: str, ready: str) -> None:  # type: ignore[no-untyped-def]
    """Go to ``url``, wait for the text ``ready`` and the charts, check the featured run is picked."""
    page.goto(url)
    page.get_by_text(ready, exact=False).wait_for(timeout=180_000)  # the first page of a fresh server loads slowly
    settled(page)
    assert FEATURED_RUN in _run_box(page)


def test_the_walkthrough_opens_on_the_views_grid(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1400})
    _open(page, f"{demo_url}/walkthrough", "Round 1 of")
    assert "Clinical run on ddxplus8" in page.locator('[data-testid="stMain"]').inner_text()
    outcomes = _options(page, "Outcome")
    assert {"certified decision", "escalated to a human"} <= set(outcomes), outcomes  # the table's words
    labels = page.locator(".round-label span")
    assert labels.count() == 2  # the Bayes decision and the runner-up, whole: wrapped, never cut
    assert page.evaluate("() => Array.from(document.querySelectorAll('.round-label span'))"
                         ".every(s => s.scrollWidth <= s.clientWidth + 1)")
    link = page.locator('[data-testid="stCode"]').first.inner_text()
    assert link.startswith(demo_url) and "?run=" in link and "&round=" in link  # the whole link, not a query
    shot(page, "walkthrough")
    click(page, page.locator('[data-testid="stMultiSelect"]', has_text="Outcome").first)
    click(page, page.get_by_role("option", name="certified decision"))
    page.keyboard.press("Escape")
    fewer = page.get_by_text(re.compile(r"^(\d{1,3}|1\d{3}) of 2000 cases match"))  # the filter took
    fewer.wait_for(timeout=30_000)
    assert 0 < int(fewer.inner_text().split()[0]) < 2000
    page.close()


def test_the_whatif_and_review_pages_open_on_it_too(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1600})
    _open(page, f"{demo_url}/whatif", "Metrics over")
    card = page.locator('[data-testid="stMetric"]', has_text="Certified").first
    shown = card.locator('[data-testid="stMetricValue"]').inner_text()
    assert shown.endswith("%") and 20 < float(shown.rstrip("%")) < 95, shown  # one unit: percent
    assert _tradeoff_inside(page)
    shot(page, "whatif")
    page.goto(f"{demo_url}/review")
    page.get_by_text("Why it escalated", exact=False).wait_for(timeout=60_000)
    assert FEATURED_RUN in _run_box(page)
    shot(page, "review")
    page.close()


def test_a_loss_change_is_named_and_the_field_shows_the_runs_l_high(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1800})
    _open(page, f"{demo_url}/whatif", "Metrics over")
    field = page.get_by_role("textbox", name="l_high")  # read strictly as text (issue 51, item 12)
    expect(field).to_have_value(re.compile(r"^5(\.0)?$"), timeout=60_000)  # the run's matrix: a high-risk miss costs 5
    assert page.get_by_text("Nothing changed", exact=False).count() == 1
    field.fill("10")
    field.press("Enter")
    page.get_by_text("Loss matrix set for every cell", exact=False).wait_for(timeout=60_000)
    settled(page)
    note = page.get_by_text("Loss matrix set for every cell", exact=False).inner_text()
    assert "l_high = 10" in note and "(the run's: high-risk" in note and "l_high = 5" in note
    assert page.get_by_text("Nothing changed", exact=False).count() == 0
    assert _tradeoff_inside(page)
    shot(page, "whatif-loss-10")
    field.fill("20")  # every case now escalates: the page says why, with the numbers
    field.press("Enter")
    why = page.get_by_text("Every case is escalated because every case ends above eps_low", exact=False)
    why.wait_for(timeout=60_000)
    assert "the closest ends at energy" in why.inner_text() and "above its cell's eps_low" in why.inner_text()
    page.close()


def test_the_overview_reads_system_risk_beside_the_share_decided(chromium, demo_url: str) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(demo_url)
    notes = page.get_by_text("count only the cases a method decided itself", exact=False)
    page.get_by_text("Accuracy, unusable answers and D-CEM's actions", exact=False).wait_for(timeout=120_000)
    app_idle(page)  # every table drawn
    assert notes.count() == 1  # said once, under the first table (issue 51, item 13)
    assert "an escalated case counts 0" in notes.first.inner_text() and "D-CEM decided" in notes.first.inner_text()
    page.close()


def test_save_and_next_says_recorded_above_the_case_it_opens(chromium, demo_url: str) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{demo_url}/review")
    page.get_by_text("Why it escalated", exact=False).wait_for(timeout=60_000)
    settled(page)
    click(page, page.locator('[data-testid="stSelectbox"]', has_text="Final label").first)  # no label is pre-selected
    page.keyboard.press("ArrowDown")  # a click focuses the box; the arrow opens its list
    click(page, page.get_by_role("option").first)
    page.get_by_label("Reviewer").fill("e2e reviewer")
    click(page, page.get_by_role("button", name="Save and next"))
    message = page.get_by_text(re.compile(r"Review of .+ recorded\. Next unreviewed case"))
    message.wait_for(timeout=120_000)
    picker = page.locator('[data-testid="stSelectbox"]', has_text="Case to review").first
    assert message.bounding_box()["y"] < picker.bounding_box()["y"]  # type: ignore[index]
    page.close()


def test_the_guarantee_check_shows_every_cell_and_the_chosen_level(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    """In Chromium: the what-if's Learn-then-Test section, off until asked, then a summary
    over every cell of the featured run, the per-cell table and the trade-off chart."""
    page = chromium.new_page(viewport={"width": 1400, "height": 2600})
    _open(page, f"{demo_url}/whatif", "Metrics over")
    assert page.get_by_text("cells found a setting", exact=False).count() == 0
    click(page, page.get_by_text("Check a guarantee on this run"))
    summary = page.get_by_text("cells found a setting", exact=False)
    summary.wait_for(timeout=60_000)
    settled(page)
    found = re.search(r"(\d+) of (\d+) cells found a setting", summary.inner_text())
    assert found and int(found.group(2)) == 20 and 0 < int(found.group(1)) <= 20  # the views grid's cells
    find = ("Array.from(document.querySelectorAll('.js-plotly-plot')).find(p => p._fullData && "
            "p._fullData.some(t => String(t.name).startsWith('passed the test')))")
    page.wait_for_function(f"() => !!({find})", timeout=60_000)
    names = page.evaluate(f"() => {find}._fullData.map(t => t.name)")
    assert "run's thresholds, TEST half" in names and any(n.startswith("chosen (energy") for n in names)
    shot(page, "whatif-guarantee")
    page.close()


def _nav(page, title: str, ready: str) -> None:  # type: ignore[no-untyped-def]
    """Open a page from the sidebar (the session, and so the loaded set, stays)."""
    click(page, page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True))
    page.get_by_text(ready, exact=False).first.wait_for(timeout=60_000)
    app_idle(page)


def _pick(page, box: str, option: str) -> None:  # type: ignore[no-untyped-def]
    click(page, page.locator('[data-testid="stSelectbox"]', has_text=box).first)
    click(page, page.get_by_role("option", name=option))
    app_idle(page)


def test_reviewed_labels_reach_an_unlabelled_set_and_re_score_the_run(chromium, demo_url: str, shot) -> None:  # type: ignore[no-untyped-def]
    """In Chromium, one session: the featured run's reports without labels refused (two
    agents, issue 51); the panel of three's loaded without them, the first escalation
    reviewed and its label given to the set, the run re-scored with it."""
    page = chromium.new_page(viewport={"width": 1400, "height": 2000})
    page.goto(f"{demo_url}/calibration")
    page.get_by_text("Calibration sets", exact=False).first.wait_for(timeout=60_000)
    click(page, page.get_by_text("Stored run", exact=True))
    page.get_by_text("Load from run").wait_for(timeout=60_000)
    assert FEATURED_RUN in _run_box(page)
    click(page, page.get_by_text("Leave out the true labels", exact=False))
    click(page, page.get_by_role("button", name="Load from run"))
    refused = page.get_by_text("with two agents the reports alone cannot tell which one is right", exact=False)
    refused.wait_for(timeout=60_000)
    assert "at least 6, all for the same agent" in refused.inner_text()
    _pick(page, "Run", TRIO_RUN)
    _pick(page, "Cell", "S2 seed 1")  # the cell of the queue's first escalation
    click(page, page.get_by_role("button", name="Load from run"))
    caption = page.get_by_text("estimated without labels by Dawid-Skene", exact=False)
    caption.wait_for(timeout=60_000)
    assert caption.inner_text().startswith("100 cases (0 labelled), 3 agents")
    shot(page, "calibration-unlabelled")

    _nav(page, "Escalation review", "Why it escalated")
    _pick(page, "Run", TRIO_RUN)
    click(page, page.locator('[data-testid="stSelectbox"]', has_text="Final label").first)
    page.keyboard.press("ArrowDown")
    click(page, page.get_by_role("option").first)
    page.get_by_label("Reviewer").fill("e2e flow")
    click(page, page.get_by_role("button", name="Record review"))
    page.get_by_text(re.compile(r"Review of .+ recorded")).wait_for(timeout=60_000)
    click(page, page.get_by_role("button", name="Add reviewed cases to the calibration set"))
    done = page.get_by_text(re.compile(r"\d+ reviewed cases? of the set now ha(s|ve) the reviewer's label"))
    done.wait_for(timeout=60_000)
    found = re.search(r"The calibration set has (\d+) labelled of (\d+) cases", done.inner_text())
    assert found and int(found.group(1)) >= 1 and int(found.group(2)) >= 100

    _nav(page, "Loss and thresholds", "Metrics over")
    _pick(page, "Run", TRIO_RUN)
    toggle = page.get_by_text(f"Use the loaded calibration set (run {TRIO_RUN} S2/seed 1", exact=False)
    click(page, toggle)
    page.get_by_text("come from the loaded calibration set", exact=False).first.wait_for(timeout=60_000)
    settled(page)
    deltas = [d.inner_text() for d in page.locator('[data-testid="stMetricDelta"]').all()]
    assert deltas and any(not re.match(r"^[+-]?0\.0+ ", d) for d in deltas), deltas  # the set moved something
    shot(page, "whatif-reviewed-set")
    page.close()
