"""End to end in Chromium: the Experiments page's clinical launch on an uploaded case file.
A malformed file is refused with the command line's message and Run stays disabled; the
example file with two statistical members reading its two views runs, says how many cells
it computed (the count the store holds), its cases open in the walkthrough, and the
Overview, Loss and thresholds and Escalation review pages show the run with its labels."""
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
EXAMPLE = ROOT / "data" / "examples" / "abdominal_pain_cases.jsonl"


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory, chromium: object) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("e2e-cases") / "cases.duckdb"
    for url in serve_dashboard(db, tmp_path_factory.mktemp("e2e-cases-log")):
        yield url, db


def _fill(page, name: str, value: str) -> None:  # type: ignore[no-untyped-def]
    box = page.get_by_role("textbox", name=re.compile(name))
    box.fill(value)
    box.press("Enter")
    app_idle(page)


def test_an_uploaded_case_file_is_checked_runs_and_opens_in_the_walkthrough(chromium, empty_store, tmp_path,  # type: ignore[no-untyped-def]
                                                                            shot) -> None:
    url, db = empty_store
    page = chromium.new_page(viewport={"width": 1400, "height": 2000})
    page.goto(f"{url}/experiments")
    header = page.get_by_text("Launch a clinical experiment")
    header.wait_for(timeout=60_000)
    click(page, header)
    click(page, page.get_by_text("Use my case file"))
    bad = tmp_path / "broken.jsonl"
    lines = EXAMPLE.read_bytes().splitlines()
    bad.write_bytes(b"\n".join(lines[:2] + [b"{not json"] + lines[2:]))
    page.locator("input[type=file]").set_input_files(str(bad))
    page.get_by_text("broken.jsonl line 3 is not JSON").wait_for(timeout=60_000)
    assert page.get_by_role("button", name="Run", exact=True).last.is_disabled()

    page.locator("input[type=file]").set_input_files(str(EXAMPLE))
    page.get_by_text(re.compile(r"275 cases in 5 classes")).wait_for(timeout=60_000)
    _fill(page, "Members", "stat:tfidf-lr@history, stat:tfidf-lr@exam")
    _fill(page, "CAL cases", "20")
    _fill(page, "TEST cases", "15")
    _fill(page, "Round budget", "3")
    page.get_by_text("1 cell (scenarios × seeds); 0 already stored", exact=False).wait_for(timeout=30_000)
    click(page, page.get_by_role("button", name="Run", exact=True).last)
    done = page.get_by_text(re.compile(r"Run llm-\w+: 1 cell computed, 0 already stored"))
    done.wait_for(timeout=240_000)
    run_id = re.search(r"Run (llm-\w+):", done.inner_text()).group(1)  # type: ignore[union-attr]
    app_idle(page)
    with Store.open_retrying(db, read_only=True) as store:
        assert store.done_cells(run_id) == {("S1", 0)}
        case_id, text = store.con.execute("SELECT case_id, text FROM case_texts WHERE run_id = ? ORDER BY case_id "
                                          "LIMIT 1", [run_id]).fetchone()
    shot(page, "experiments-case-file")

    page.goto(f"{url}/walkthrough?run={run_id}&method=dcem&case={case_id}")
    page.get_by_text(text[:60], exact=False).first.wait_for(timeout=60_000)
    app_idle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Traceback" not in main and any(label in main for label in ("Appendicitis", "Renal_colic", "Gastroenteritis"))
    shot(page, "walkthrough-case-file")

    for path, words in (("", "Chance is 1/5 = 0.200"), ("whatif", "Metrics over 15 cases"), ("review", "Escalated")):
        page.goto(f"{url}/{path}")  # a new session: the store's one run is the one shown
        page.get_by_text("Research and teaching tool", exact=False).first.wait_for(timeout=60_000)
        app_idle(page)
        shot(page, f"{path or 'overview'}-case-file")
        box = page.locator('[data-testid="stSelectbox"]', has_text="Run").first
        assert run_id in str(box.locator("input").first.get_attribute("value")), path
        main = page.locator('[data-testid="stMain"]')
        main.get_by_text(words, exact=False).first.wait_for(timeout=60_000)
        assert "Traceback" not in main.inner_text() and page.get_by_test_id("stException").count() == 0, path
    page.close()
