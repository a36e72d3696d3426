"""SAG runs as a compact export (``python -m sag export``), read back by ``sag compare
--export``: the same table as from the store, every file checked against the manifest."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from common.errors import InputError
from sag.run_export import FORMAT, TABLES, read_run_export, write_run_export
from sag.store.tables import SagStore

from .cli_fakes import one_error_line, run_cli
from .group_runs import GROUP_RUN_ITEMS, build_group_runs


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("export") / "sag.duckdb"
    runs = build_group_runs(path, tmp_path_factory.mktemp("idx"))
    return path, {name: s.run_id for name, s in runs.items()}


@pytest.fixture()
def exported(stored: tuple[Path, dict[str, str]], tmp_path: Path) -> Path:
    path, ids = stored
    out = tmp_path / "runs-export"
    code, _, err = run_cli(["export", ids["sag"], ids["majority"], "--out", str(out), "--db", str(path),
                            "--command", "python -m sag run ..."])
    assert code == 0, err
    return out


def test_the_export_holds_the_runs_and_no_store(stored: tuple[Path, dict[str, str]], exported: Path) -> None:
    path, ids = stored
    assert sorted(p.name for p in exported.iterdir()) == sorted(["manifest.json", *(f"{t}.parquet" for t in TABLES)])
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["format"] == FORMAT and manifest["command"] == "python -m sag run ..."
    assert [r["run_id"] for r in manifest["runs"]] == [ids["sag"], ids["majority"]]
    assert all(r["items"] == GROUP_RUN_ITEMS == r["answered"] and r["status"] == "finished" for r in manifest["runs"])
    export = read_run_export(exported)
    with SagStore(path, create=False) as store:
        stored_outcomes = store.outcomes(ids["sag"])
        messages = sum(len(store.messages(ids["sag"], i)) for i in stored_outcomes["item_id"])
    mine = export.outcomes_of(ids["sag"])
    assert list(mine["item_id"]) == list(stored_outcomes["item_id"])
    assert list(mine["answer"]) == list(stored_outcomes["answer"]) == ["B"] * GROUP_RUN_ITEMS
    answers = export.answers[export.answers["run_id"] == ids["sag"]]
    assert len(answers) == messages and "rationale" not in answers.columns
    assert set(answers["answer"].dropna()) == {"B", "C"}  # R2 holds C in the scripted debate
    assert len(export.items_of(ids["majority"])) == GROUP_RUN_ITEMS


def test_compare_reads_the_export_as_it_reads_the_store(stored: tuple[Path, dict[str, str]], exported: Path) -> None:
    path, ids = stored
    from_store = run_cli(["compare", ids["sag"], ids["majority"], "--db", str(path)])
    from_export = run_cli(["compare", ids["sag"], ids["majority"], "--export", str(exported)])
    assert from_store[0] == from_export[0] == 0
    assert from_export[1] == from_store[1] and "| C 100% |" in from_export[1]


def test_a_changed_missing_or_foreign_file_is_refused(exported: Path, tmp_path: Path) -> None:
    changed = tmp_path / "changed"
    shutil.copytree(exported, changed)
    frame = pd.read_parquet(changed / "outcomes.parquet")
    frame.loc[0, "answer"] = "A"
    frame.to_parquet(changed / "outcomes.parquet", index=False)
    with pytest.raises(InputError, match="outcomes.parquet is missing or changed"):
        read_run_export(changed)
    (changed / "outcomes.parquet").unlink()
    with pytest.raises(InputError, match="outcomes.parquet is missing"):
        read_run_export(changed)
    (changed / "outcomes.parquet").symlink_to(exported / "outcomes.parquet")  # the right bytes, not its own file
    with pytest.raises(InputError, match="outcomes.parquet is a link"):
        read_run_export(changed)
    (changed / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="not readable JSON"):
        read_run_export(changed)
    (changed / "manifest.json").write_text(json.dumps({"format": "training-run-export/1"}))
    with pytest.raises(InputError, match="format must be 'sag-runs-export/1'"):
        read_run_export(changed)
    with pytest.raises(InputError, match="manifest.json is missing"):
        read_run_export(tmp_path / "nowhere")


def test_the_commands_refuse_in_one_line(stored: tuple[Path, dict[str, str]], exported: Path, tmp_path: Path) -> None:
    path, ids = stored
    assert "no SAG run 'nope'" in one_error_line(
        *run_cli(["export", ids["sag"], "nope", "--out", str(tmp_path / "x"), "--db", str(path)]))
    assert not (tmp_path / "x").exists()
    assert "a run is named twice" in one_error_line(
        *run_cli(["export", ids["sag"], ids["sag"], "--out", str(tmp_path / "x"), "--db", str(path)]))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    assert "holds other files" in one_error_line(
        *run_cli(["export", ids["sag"], "--out", str(busy), "--db", str(path)]))
    assert (busy / "notes.txt").read_text() == "mine"
    assert "no run 'nope' in the export" in one_error_line(
        *run_cli(["compare", ids["sag"], "nope", "--export", str(exported)]))
    with SagStore(path, create=False) as store:
        with pytest.raises(InputError, match="give at least one run id"):
            write_run_export(store, [], tmp_path / "y", command="")


def test_an_unfinished_run_exports_what_it_answered(tmp_path: Path) -> None:
    from sag.config import preset
    from sag.run import SagRunSpec, run_sag

    from .fakes import ScriptedTurns, constant

    path = tmp_path / "partial.duckdb"
    spec = SagRunSpec("medqa", preset("single"), n_items=4, seed=0)
    calls = {"n": 0}

    def stop_after_two() -> bool:
        calls["n"] += 1
        return calls["n"] > 2

    with SagStore(path) as store:
        summary = run_sag(store, spec, runners={m: ScriptedTurns(constant("A")) for m in spec.cfg.models()},
                          cancel=stop_after_two)
        write_run_export(store, [summary.run_id], tmp_path / "out", command="")
    export = read_run_export(tmp_path / "out")
    entry = export.manifest["runs"][0]
    assert (entry["items"], entry["answered"], entry["status"]) == (4, 2, "running")
    assert len(export.outcomes) == 2 and len(export.items) == 4


def test_shipped_exports_compare_each_group_with_the_first_run(exported: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from sag.shipped_runs import group_comparisons
    from sag.versus import versus_frame

    shipped = tmp_path / "sag_runs"
    shutil.copytree(exported, shipped / "heldout-x")
    monkeypatch.setattr("sag.shipped_runs.runs_dir", lambda: shipped)
    found, problems = group_comparisons("sag-6-majority")
    assert problems == [] and len(found) == 1
    c = found[0]
    assert (c.export, c.benchmark) == ("heldout-x", "medqa") and c.base_run != c.run
    frame = versus_frame(list(c.rows))
    assert list(frame["Most frequent answer"]) == ["B", "C"] and frame.loc[0, "95 % paired bootstrap"] == "base"
    assert frame.loc[1, "Flag"] == "one answer > 50%" and frame.loc[1, "Items"] == GROUP_RUN_ITEMS
    assert group_comparisons("sag-6") == ([], [])  # the base run is compared with nothing
    (shipped / "heldout-x" / "items.parquet").write_bytes(b"broken")
    found, problems = group_comparisons("sag-6-majority")
    assert found == [] and len(problems) == 1 and "heldout-x" in problems[0] and "items.parquet" in problems[0]


def test_compare_an_export_alone_takes_its_first_run_as_the_base(stored: tuple[Path, dict[str, str]],
                                                                 exported: Path) -> None:
    path, ids = stored
    named = run_cli(["compare", ids["sag"], ids["majority"], "--export", str(exported)])
    alone = run_cli(["compare", "--export", str(exported)])
    assert alone[0] == 0 and alone[1] == named[1]
    assert "give the base run and at least one other" in one_error_line(*run_cli(["compare", "--db", str(path)]))
