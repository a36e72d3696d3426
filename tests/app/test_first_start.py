"""studio.serve on first start: the demo runs go into an empty default store before
Streamlit starts; a store with runs is never touched; a busy store is reported in one
line and the dashboard still starts (no server is started here)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS
from dcem.store.run_export import load_run_export
from dcem.store.run_import import import_run_export, stored_run_ids
from studio import serve

CLINICAL = DEMO_EXPORTS[1]


def test_first_start_imports_the_demo_into_an_empty_default_store(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "dcem.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    line = serve.first_start(exports=(CLINICAL,))
    ids = load_run_export(CLINICAL).run_ids
    assert line is not None and "imported 2 demo runs" in line and "\n" not in line
    with Store(db) as store:
        assert stored_run_ids(store) == set(ids)
    assert serve.first_start(exports=(CLINICAL,)) is None  # the second start finds runs


def test_first_start_never_touches_a_store_with_runs(tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        import_run_export(store, CLINICAL)
        store.con.execute("DELETE FROM runs WHERE run_id = ?", [load_run_export(CLINICAL).run_ids[0]])
    before = db.stat().st_mtime_ns, db.stat().st_size
    assert serve.first_start(db) is None
    assert (db.stat().st_mtime_ns, db.stat().st_size) == before


def test_a_busy_store_is_reported_and_the_app_still_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "busy.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('held', flush=True); time.sleep(60)", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("DCEM_DB", str(db))
        started: list[list[str]] = []
        monkeypatch.setattr(serve.cli, "main", lambda: started.append(list(sys.argv)) or 0)
        monkeypatch.setattr(sys, "argv", ["serve"])
        with pytest.raises(SystemExit):
            serve.main(["--server.port", "8599"])
    finally:
        holder.kill()
        holder.wait()
    assert started and started[0][:3] == ["streamlit", "run", str(serve.APP)]
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "demo data not imported" in out[0] and "in use by another program" in out[0]
    with Store(db) as store:
        assert stored_run_ids(store) == set()


def test_dcem_demo_0_skips_the_import(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    monkeypatch.setenv("DCEM_DEMO", "0")
    monkeypatch.setattr(serve.cli, "main", lambda: 0)
    with pytest.raises(SystemExit):
        serve.main([])
    assert not db.exists()


def test_the_readme_counts_the_demo_runs_the_first_start_imports() -> None:
    import re

    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
             "ten": 10, "eleven": 11, "twelve": 12}
    kinds = {"synthetic": 0, "clinical": 0}
    for folder in DEMO_EXPORTS:
        for run_id in load_run_export(folder).run_ids:
            kinds["synthetic" if run_id.startswith("syn-") else "clinical"] += 1
    text = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    said = re.search(r"imports the shipped demo runs \((\w+) synthetic runs of the full grid and (\w+) clinical runs",
                     text)
    assert said is not None, "the README no longer says how many demo runs the first start imports"
    assert (words[said.group(1)], words[said.group(2)]) == (kinds["synthetic"], kinds["clinical"])
