"""A SAG run resumes only with the settings it was stored with (issue 51, item 2).

``python -m sag run`` takes no run id: its id hashes the benchmark, the drawn items, the
group config and the seed.  :func:`sag.runs.run.run_items` takes an explicit id (each part of an
evaluation is one), and a store merged from elsewhere can hold an id with other settings:
either way the run is refused, naming the first field that differs, before any model is
built or anything written."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinical.questions import load_benchmark
from common.resume import ResumeRefused
from sag.group.config import preset
from sag.runs.run import run_items
from sag.store.tables import SagStore
from tests.store_rows import store_rows

from ..cli_fakes import run_cli, scripted_models
from ..fakes import ScriptedTurns, constant

ITEMS = load_benchmark("medqa")[:2]


def _built(runner: ScriptedTurns, built: list[str]):  # type: ignore[no-untyped-def]
    def factory(cfg):  # type: ignore[no-untyped-def]
        built.append(cfg.name)
        return {m: runner for m in cfg.models()}
    return factory


def test_an_explicit_run_id_refuses_another_group_config(tmp_path: Path) -> None:
    db, cfg = tmp_path / "s.duckdb", preset("single")
    with SagStore(db) as store:
        first = run_items(store, "named", benchmark="medqa", cfg=cfg, seed=0, evaluation=ITEMS,
                          runners={m: ScriptedTurns(constant("B")) for m in cfg.models()}, retrievers={})
        assert first.complete and first.computed == 2
    before, built = store_rows(db), []
    with SagStore(db) as store:
        with pytest.raises(ResumeRefused) as caught:
            run_items(store, "named", benchmark="medqa", cfg=cfg.with_changes(temperature=0.7), seed=0,
                      evaluation=ITEMS, runners=_built(ScriptedTurns(constant("C")), built), retrievers={})
    assert str(caught.value).startswith("run named is stored with other settings: config.temperature stored 0.0, "
                                        "given 0.7; nothing was written")
    assert built == [] and store_rows(db) == before  # no model built, no row added, removed or changed
    with SagStore(db) as store:
        with pytest.raises(ResumeRefused, match="seed stored 0, given 1"):
            run_items(store, "named", benchmark="medqa", cfg=cfg, seed=1, evaluation=ITEMS, retrievers={},
                      runners=_built(ScriptedTurns(constant("C")), built))
        again = run_items(store, "named", benchmark="medqa", cfg=cfg, seed=0, evaluation=ITEMS, retrievers={},
                          runners=_built(ScriptedTurns(constant("C")), built))
    assert again.resumed and again.computed == 0 and built == []  # the same settings resume, loading nothing


def test_the_run_command_refuses_its_id_stored_with_another_config(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    args = ["run", "--benchmark", "medqa", "--group", "single", "--items", "2", "-q", "--db", str(db)]
    runner = scripted_models(monkeypatch)
    code, out, err = run_cli(args)
    assert code == 0 and "(new): 2 items answered now" in out, err
    with SagStore(db) as store:  # the id held with other settings, as a store merged from elsewhere could
        run_id = store.runs()["run_id"].iloc[0]
        config = store.con.execute("SELECT config_json FROM sag_runs WHERE run_id = ?", [run_id]).fetchone()[0]
        store.con.execute("UPDATE sag_runs SET config_json = ? WHERE run_id = ?",
                          [config.replace('"t_max": 3', '"t_max": 1'), run_id])
    before, calls = store_rows(db), len(runner.requests)
    code, out, err = run_cli(args)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith(f"error: run {run_id} is stored with other settings: config.t_max stored 1, given 3;")
    assert store_rows(db) == before and len(runner.requests) == calls
