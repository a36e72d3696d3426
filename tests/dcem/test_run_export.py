"""Run export: written from the store, read back equal, metrics re-derived from the
outcomes, and every kind of broken export refused with a clear message."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from dcem.analysis.export_metrics import clinical_metrics, metric_mismatches, recompute_metrics
from common.errors import ProjectError, InputError
from dcem.store.database import Store, StoreError
from dcem.store.run_export import FORMAT, MANIFEST, TABLES, RunExport, load_run_export, write_run_export
from tests.dcem_clinical.export_runs import COMMAND, clinical_runs

MODELS = [{"key": "fake-a", "file": None, "size_bytes": None, "sha256": None, "note": "scripted"},
          {"key": "smollm2-135m", "file": "m.gguf", "size_bytes": 10, "sha256": "ab" * 32}]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[str, ...], Path]:
    db, runs = clinical_runs()
    out = tmp_path_factory.mktemp("export") / "clinical"
    with Store(db) as store:
        write_run_export(store, runs, out, command=COMMAND, models=MODELS)
    return db, runs, out


@pytest.fixture()
def copy(exported: tuple[Path, tuple[str, ...], Path], tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(exported[2], target)
    return target


def test_manifest_names_format_runs_command_models_and_file_digests(exported: tuple[Path, tuple[str, ...], Path]) -> None:
    db, runs, out = exported
    export = load_run_export(out)
    manifest = export.manifest
    assert manifest["format"] == FORMAT and manifest["command"] == COMMAND and manifest["models"] == MODELS
    assert export.run_ids == list(runs)
    with Store(db) as store:
        for entry in manifest["runs"]:
            spec, config = store.con.execute("SELECT spec_json, config_json FROM runs WHERE run_id = ?",
                                             [entry["run_id"]]).fetchone()
            assert entry["kind"] == "clinical" and entry["spec"] == json.loads(spec)
            assert entry["config"] == json.loads(config)
    assert {f["table"] for f in manifest["files"]} == set(TABLES)
    assert all(len(f["sha256"]) == 64 and (out / f["name"]).is_file() for f in manifest["files"])
    assert sum((out / f["name"]).stat().st_size for f in manifest["files"]) < 200_000


def test_outcomes_metrics_and_tables_round_trip_equal_to_the_store(exported: tuple[Path, tuple[str, ...], Path]) -> None:
    db, runs, out = exported
    export = load_run_export(out)
    with Store(db) as store:
        for run in runs:
            mine = export.outcomes[export.outcomes["run_id"] == run].reset_index(drop=True)
            pd.testing.assert_frame_equal(mine, store.outcomes(run))
            metrics = export.metrics[export.metrics["run_id"] == run].drop(columns="run_id").reset_index(drop=True)
            pd.testing.assert_frame_equal(metrics, store.metrics(run))
        for table, source in (("cells", "cells"), ("cases", "cases"), ("traces", "traces"), ("turns", "agent_turns")):
            assert len(getattr(export, table)) == store.con.execute(f"SELECT count(*) FROM {source}").fetchone()[0]
        probs = store.con.execute("SELECT probabilities FROM traces ORDER BY run_id, case_id, method, round").df()
    assert export.cases["text"].notna().all() and export.cases["source_id"].notna().all()
    mine, theirs = export.traces["probabilities"].dropna(), probs["probabilities"].dropna()
    assert len(mine) == len(theirs) > 0
    assert all(np.array_equal(np.stack(a), np.stack(b)) for a, b in zip(mine, theirs))
    assert set(export.traces["action"].dropna()) <= {"CONTINUE", "DIFFERENTIAL_STEER", "STOP_AND_DECIDE",
                                                     "STOP_AND_ESCALATE"}


def test_recomputed_metrics_equal_the_exported_table(exported: tuple[Path, tuple[str, ...], Path]) -> None:
    export = load_run_export(exported[2])
    again = recompute_metrics(export)
    keys = ["run_id", "scenario", "seed", "method", "metric"]
    assert set(map(tuple, again[keys].to_numpy().tolist())) == set(map(tuple, export.metrics[keys].to_numpy().tolist()))
    assert metric_mismatches(export).empty
    with_dataset = clinical_metrics(export)
    assert set(with_dataset["dataset"]) == {"ddxplus8", "medqa-tri"}


def test_a_changed_outcome_shows_as_a_mismatch(exported: tuple[Path, tuple[str, ...], Path]) -> None:
    export = load_run_export(exported[2])
    outcomes = export.outcomes.copy()
    row = outcomes.index[(outcomes["method"] == "dcem") & (outcomes["action"] == "STOP_AND_ESCALATE")][0]
    outcomes.loc[row, "action"] = "STOP_AND_DECIDE"
    forged = RunExport(**{**export.__dict__, "outcomes": outcomes})
    bad = metric_mismatches(forged)
    assert not bad.empty and {"escalation_rate", "certified_rate"} & set(bad["metric"])
    assert set(bad["method"]) == {"dcem"}


def test_missing_directory_and_missing_manifest_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no export directory"):
        load_run_export(tmp_path / "nowhere")
    with pytest.raises(InputError, match="has no manifest.json"):
        load_run_export(tmp_path)


def test_wrong_format_tag_is_refused(copy: Path) -> None:
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    manifest["format"] = "sag-eval/1"
    (copy / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(InputError, match=r"not a D-CEM run export: format 'sag-eval/1', expected 'dcem-run-export/1'"):
        load_run_export(copy)


def test_modified_parquet_file_is_refused_by_its_sha256(copy: Path) -> None:
    target = copy / "outcomes.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * REPLACE (0.0 AS loss) FROM read_parquet('{target}')) TO '{copy / 'x.parquet'}' "
                "(FORMAT PARQUET, COMPRESSION ZSTD)")
    con.close()
    (copy / "x.parquet").replace(target)
    with pytest.raises(InputError, match=r"outcomes.parquet has sha256 .* the file was modified or is corrupt"):
        load_run_export(copy)


def test_missing_listed_file_is_refused(copy: Path) -> None:
    (copy / "traces.parquet").unlink()
    with pytest.raises(InputError, match="traces.parquet is listed in the manifest but missing"):
        load_run_export(copy)


def test_write_refuses_unknown_runs_and_bad_arguments(exported: tuple[Path, tuple[str, ...], Path],
                                                     tmp_path: Path) -> None:
    db, runs, _ = exported
    with Store(db) as store:
        with pytest.raises(StoreError, match="no run 'nope'"):
            write_run_export(store, [runs[0], "nope"], tmp_path / "x", command="c", models=[])
        with pytest.raises(ProjectError, match="at least one run"):
            write_run_export(store, [], tmp_path / "x", command="c", models=[])
        with pytest.raises(ProjectError, match="command"):
            write_run_export(store, runs, tmp_path / "x", command=" ", models=[])
        with pytest.raises(ProjectError, match="64 lowercase hex"):
            write_run_export(store, runs, tmp_path / "x", command="c", models=[{"key": "m", "sha256": "xyz"}])
    assert not (tmp_path / "x" / MANIFEST).exists()


def test_turn_examples_are_kept_per_turn_and_checked(exported: tuple[Path, tuple[str, ...], Path],
                                                     tmp_path: Path) -> None:
    db, runs, _ = exported
    with Store(db) as store:
        key = store.con.execute("SELECT run_id, case_id, method, round, agent FROM agent_turns "
                                "ORDER BY ALL LIMIT 1").fetchone()
        examples = pd.DataFrame([(*key, '[{"rank": 1, "source_id": "cal-7"}]')],
                                columns=["run_id", "case_id", "method", "round", "agent", "examples_json"])
        write_run_export(store, runs, tmp_path / "with", command="c", models=[], turn_examples=examples)
        with pytest.raises(InputError, match="more than one row for a turn"):
            write_run_export(store, runs, tmp_path / "dup", command="c", models=[],
                             turn_examples=pd.concat([examples, examples]))
        with pytest.raises(InputError, match="lacks the columns examples_json"):
            write_run_export(store, runs, tmp_path / "cols", command="c", models=[],
                             turn_examples=examples.drop(columns="examples_json"))
    turns = load_run_export(tmp_path / "with").turns
    carried = turns[turns["examples_json"].notna()]
    assert len(carried) == 1 and tuple(carried.iloc[0][["run_id", "case_id", "method"]]) == key[:3]
    assert json.loads(carried.iloc[0]["examples_json"]) == [{"rank": 1, "source_id": "cal-7"}]


def test_a_store_before_the_examples_column_exports_read_only(exported: tuple[Path, tuple[str, ...], Path],
                                                             tmp_path: Path) -> None:
    db, runs, _ = exported
    old = tmp_path / "old.duckdb"
    shutil.copy(db, old)
    con = duckdb.connect(str(old))
    con.execute("ALTER TABLE agent_turns DROP COLUMN examples_json")
    con.execute("DELETE FROM schema_migrations WHERE name = 'dcem/004_agent_turn_examples'")
    con.close()
    with Store(old, read_only=True) as store:
        write_run_export(store, runs, tmp_path / "out", command="c", models=[])
    turns = load_run_export(tmp_path / "out").turns
    assert len(turns) and turns["examples_json"].isna().all()
