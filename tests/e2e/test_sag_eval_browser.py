"""End to end in a real browser: the Group evaluation page reads the shipped evaluation
export (an empty store beside it) and shows its tables, the ROC curve and the seed comparison."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.e2e.conftest import _require_chromium, serve_dashboard
from tests.e2e.stable import click

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def eval_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _require_chromium()
    db = tmp_path_factory.mktemp("e2e-eval") / "empty.duckdb"
    yield from serve_dashboard(db, tmp_path_factory.mktemp("e2e-eval-log"))


def test_group_evaluation_from_the_shipped_export(eval_url: str, browser, shot) -> None:  # type: ignore[no-untyped-def]
    # the session's browser: a second Playwright instance cannot start while it runs
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        page.goto(f"{eval_url}/sag_evaluation")
        page.get_by_text("Accuracy by benchmark", exact=False).first.wait_for(timeout=60_000)
        main = page.locator('[data-testid="stMain"]')
        assert page.get_by_text("Research and teaching tool, not clinical advice", exact=False).first.is_visible()
        text = main.inner_text()
        assert "single-gemma" in text and "vote-6" in text
        click(page, page.get_by_role("tab", name="Safety"))
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1", timeout=30_000)
        assert "learned screen" in main.inner_text()
        roc = ("Array.from(document.querySelectorAll('.js-plotly-plot')).find(p => p._fullLayout && "
               "String(p._fullLayout.title.text).includes('Refusal score'))")
        page.wait_for_function(f"() => !!({roc})", timeout=30_000)
        colours = page.evaluate(f"() => {roc}._fullData.filter(t => t.name !== 'chance').map(t => t.line.color)")
        assert len(colours) >= 11 and len(set(colours)) == len(colours)  # every system its own colour
        assert "earns no credit for refusing the harmful ones" in main.inner_text()  # the reading column's caveat
        click(page, page.get_by_role("tab", name="Relevance"))
        assert "from 0 (no shared word sequence) to 100 (the same text)" in main.inner_text()  # the scale
        click(page, page.get_by_role("tab", name="Seed comparison"))
        page.get_by_text("Table 6: deployment cost", exact=False).first.wait_for(timeout=30_000)
        path = shot(page, "sag-eval")
        assert path.stat().st_size > 10_000
    finally:
        page.close()
