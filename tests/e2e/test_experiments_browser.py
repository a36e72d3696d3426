"""End to end: Stop during a launch on the Experiments page, in a real browser.

A control pressed during a launch starts a new page run while the old one still computes
its cell; the page must wait for that cell, then say how many cells are truly stored,
with every section of the page back and no Stop button left.  Streamlit's own header Stop
(which would end the script with the page half drawn and no word) is hidden meanwhile."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from dcem.store.database import Store
from tests.e2e.conftest import serve_dashboard
from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def own_store(run_db: Path, tmp_path_factory: pytest.TempPathFactory, chromium: object) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("e2e-exp") / "exp.duckdb"
    shutil.copy(run_db, db)
    for url in serve_dashboard(db, tmp_path_factory.mktemp("e2e-exp-log")):
        yield url, db


def test_stop_ends_the_launch_with_the_true_count_and_the_page_back(chromium, own_store, shot) -> None:  # type: ignore[no-untyped-def]
    url, db = own_store
    page = chromium.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(f"{url}/experiments")
    page.get_by_text("Launch a synthetic experiment").wait_for(timeout=60_000)
    click(page, page.get_by_text("Launch a synthetic experiment"))
    seeds = page.get_by_role("textbox", name=re.compile("Seeds"))
    seeds.fill("40")
    seeds.press("Enter")
    page.get_by_text("160 cells: 4 scenarios × 40 seeds", exact=False).wait_for(timeout=30_000)
    click(page, page.get_by_role("button", name="Run", exact=True))
    page.get_by_text(re.compile(r"\b[2-9] of 160 cells \(")).wait_for(timeout=120_000)
    assert not page.get_by_test_id("stBaseButton-header").is_visible()  # one Stop: the page's own
    assert page.get_by_text("Compare two runs").is_visible()  # the rest of the page stays while it runs
    click(page, page.get_by_test_id("stExpanderDetails").get_by_role("button", name="Stop"), idle=False)
    message = page.get_by_text(re.compile(r"Stopped after \d+ of 160 cells"))
    message.wait_for(timeout=120_000)
    app_idle(page)
    shown = int(re.search(r"Stopped after (\d+) of", message.inner_text()).group(1))  # type: ignore[union-attr]
    with Store.open_retrying(db, read_only=True) as store:
        run = store.con.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1").fetchone()[0]
        stored = len(store.done_cells(run))
    assert shown == stored and 2 <= stored < 160
    main = page.locator('[data-testid="stMain"]')
    assert page.get_by_text("Compare two runs").is_visible() and "Download" in main.inner_text()
    assert main.get_by_role("button", name="Stop").count() == 0
    assert page.get_by_text(f"{stored} already stored, Run computes {160 - stored}", exact=False).is_visible()
    shot(page, "experiments-stopped")
    page.close()
