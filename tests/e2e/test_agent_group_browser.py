"""End to end in a real browser: the Agent group page on stored scripted SAG runs shows the
debate timeline and the distributions chart, and switches to the plain debate run."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.e2e.conftest import _require_chromium, serve_dashboard
from tests.sag.group_runs import build_group_runs
from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def group_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard on a store holding only the scripted SAG runs of tests/sag/group_runs.py."""
    _require_chromium()
    db = tmp_path_factory.mktemp("e2e-sag") / "sag.duckdb"
    build_group_runs(db, tmp_path_factory.mktemp("e2e-idx"))
    yield from serve_dashboard(db, tmp_path_factory.mktemp("e2e-sag-log"))


def _settled(page, charts: int) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {charts}",
                           timeout=30_000)
    app_idle(page)


def test_agent_group_timeline_and_chart(group_url: str, chromium, shot) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(f"{group_url}/agent_group")
    page.get_by_text("Debate timeline", exact=True).wait_for(timeout=60_000)
    assert "Agent group" in page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert page.get_by_text("not clinical advice", exact=False).first.is_visible()
    _settled(page, 2)  # the newest run is the D-CEM one: distributions and energy/action
    main = page.locator('[data-testid="stMain"]')
    text = main.inner_text()
    for lane in ("Reasoning agents (A_R)", "Knowledge agents (A_K)", "Safety agents (A_S)",
                 "Synthesis and judge agents (A_J)"):
        assert lane in text
    assert "Answer distribution of each agent, by round" in text and "D-CEM energy and action" in text
    assert "R1 → " in text and "Round 2" in text
    assert "What the packaged models can do" in text and "cannot answer clinical questions" in text
    outcome = page.get_by_text("The group answered", exact=False).first
    assert outcome.locator("xpath=ancestor::*[@data-testid='stAlertContainer']").count() in (0, 1)
    assert page.locator('[data-testid="stAlertContentSuccess"]', has_text="The group answered").count() == 0
    shot(page, "dcem")
    click(page, page.locator('[data-testid="stSelectbox"]', has_text="Run").first)
    click(page, page.get_by_role("option", name="medqa · sag-6 · sag", exact=False))
    page.get_by_text("Retrieved passages", exact=True).wait_for(timeout=30_000)
    page.get_by_text("searched: mlp-", exact=False).first.wait_for(timeout=30_000)
    page.wait_for_function("(document.querySelector('input[aria-label=\"Item\"]') || {value: ''})"
                           ".value.includes('answered B, truth')", timeout=30_000)  # an item of this run
    _settled(page, 1)
    path = shot(page, "debate")
    assert path.stat().st_size > 10_000
    page.close()
