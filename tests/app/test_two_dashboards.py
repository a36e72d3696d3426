"""Defect 16, the dashboard side: a dashboard process holds the result store only while
a page runs, so two dashboards (two reviewers) can work on one file at once."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from dcem.store.reviews import review_history
from studio.store_scope import open_count, open_for_run, run_scope
from tests.spawn_support import run_workers

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def _closed(db: Store) -> bool:
    try:
        db.con.execute("SELECT 1")
    except duckdb.Error:
        return True
    return False


def test_a_scope_opens_once_and_closes_at_its_end_even_on_error(tmp_path: Path) -> None:
    path = str(tmp_path / "s.duckdb")
    with pytest.raises(RuntimeError, match="page failed"):
        with run_scope():
            first = open_for_run(Store, path)
            assert open_for_run(Store, path) is first and open_count() == 1
            raise RuntimeError("page failed")
    assert _closed(first) and open_count() == 0
    loose = open_for_run(Store, path)  # outside a scope: a fresh store per call
    try:
        assert open_for_run(Store, path) is not loose and open_count() == 0
    finally:
        loose.close()


def test_nested_scopes_keep_their_own_stores(tmp_path: Path) -> None:
    path = str(tmp_path / "n.duckdb")
    with run_scope():
        outer = open_for_run(Store, path)
        with run_scope():
            inner = open_for_run(Store, path)
            assert inner is not outer
        assert _closed(inner) and not _closed(outer)
        assert open_for_run(Store, path) is outer
    assert _closed(outer)


def _other_process_can_write(path: Path) -> bool:
    code = ("import sys, duckdb\n"
            "con = duckdb.connect(sys.argv[1]); con.execute('CREATE TABLE IF NOT EXISTS probe (x INT)'); con.close()")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, timeout=60).returncode == 0


def test_defect16_the_dashboard_lets_go_of_the_file_between_page_runs(run_db: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "free.duckdb"
    shutil.copy(run_db, path)
    monkeypatch.setenv("DCEM_DB", str(path))
    at = AppTest.from_file(APP, default_timeout=120).run()
    for page in ("pages/review.py", "pages/agent_group.py", "pages/overview.py"):
        at.switch_page(page).run()
        assert not at.exception and not at.error, page
        assert _other_process_can_write(path), f"{page} kept the store open after its run"


def test_defect16_two_dashboards_reviewing_at_once_land_every_review(run_db: Path, tmp_path: Path, spawn: Any) -> None:
    from tests.app import dashboard_workers

    path = tmp_path / "two.duckdb"
    shutil.copy(run_db, path)
    n = 6
    results = run_workers(spawn, dashboard_workers.reviewer, [(str(path), who, n) for who in ("ana", "ben")],
                          timeout=600)
    assert [r[2] for r in results] == [None, None], results
    with Store(path) as db:
        reviews = db.con.execute("SELECT case_id, reviewer, comment FROM reviews").df()
        case = reviews["case_id"].iloc[0]
        history = review_history(db, "ui-run", case)
    assert len(reviews) == 2 * n and set(reviews["case_id"]) == {case}
    for who in ("ana", "ben"):
        assert history[history.reviewer == who]["comment"].tolist() == [f"{who} {i}" for i in range(n)]
    assert sum(r[1] for r in results) > 0, results  # the dashboards did contend for the file
