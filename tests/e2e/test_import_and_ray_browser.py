"""End to end in Chromium: the sidebar's one import brings a run export into an empty store
and stays in the sidebar; the Experiments page runs a launch on local Ray workers and says
how many cells it computed, the same count the store holds."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest

from dcem.store.database import Store
from tests.e2e.conftest import serve_dashboard
from tests.e2e.stable import app_idle, click

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory, chromium: object) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("e2e-import") / "empty.duckdb"
    for url in serve_dashboard(db, tmp_path_factory.mktemp("e2e-import-log")):
        yield url, db


def test_the_sidebar_imports_an_export_and_experiments_run_on_ray(chromium, empty_store, shot) -> None:  # type: ignore[no-untyped-def]
    url, db = empty_store
    page = chromium.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(url)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Import an export").wait_for(timeout=60_000)
    click(page, sidebar.get_by_text("Import an export"))
    folder = sidebar.get_by_role("textbox", name="Export folder")
    folder.fill(str(ROOT / "data" / "results" / "dcem_synthetic"))
    folder.press("Enter")
    click(page, sidebar.get_by_role("button", name="Import"))
    sidebar.get_by_text(re.compile(r"Imported \d+ D-CEM run\(s\)")).wait_for(timeout=120_000)
    assert sidebar.get_by_role("textbox", name="Export folder").is_visible()  # still there after the rerun
    shot(page, "sidebar-import")

    page.goto(f"{url}/experiments")
    page.get_by_text("Launch a synthetic experiment").wait_for(timeout=60_000)
    click(page, page.get_by_text("Launch a synthetic experiment"))
    seeds = page.get_by_role("textbox", name=re.compile("Seeds"))
    seeds.fill("2")
    seeds.press("Enter")
    page.get_by_text("8 cells: 4 scenarios × 2 seeds", exact=False).wait_for(timeout=30_000)
    synthetic = page.get_by_test_id("stExpander").filter(has_text="Launch a synthetic experiment")
    click(page, synthetic.get_by_text(re.compile("Ray: 2 local workers")))  # the clinical launch has one too
    click(page, page.get_by_role("button", name="Run", exact=True))
    done = page.get_by_text(re.compile(r"Run syn-\w+: 8 cells computed, 0 already stored"))
    done.wait_for(timeout=240_000)
    run_id = re.search(r"Run (syn-\w+):", done.inner_text()).group(1)  # type: ignore[union-attr]
    app_idle(page)
    with Store.open_retrying(db, read_only=True) as store:
        assert len(store.done_cells(run_id)) == 8
        assert store.runs().set_index("run_id").loc[run_id, "status"] == "finished"
    shot(page, "experiments-ray")
    page.close()
