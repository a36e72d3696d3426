"""SAG runs as a compact export (``python -m sag export``: every table of the runs and their
call log), read back by ``sag compare --export`` and ``sag report --from-export``: the same
tables as from the store, every file checked against the manifest.  The older runs export
(four tables) stays readable."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from common.errors import InputError
from sag.runs.store_export import FORMAT as STORE_FORMAT
from sag.runs.run_export import FORMAT, TABLES, read_run_export, write_run_export
from sag.store.tables import SagStore

from ..cli_fakes import one_error_line, run_cli
from ..group_runs import GROUP_RUN_ITEMS, build_group_runs


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


@pytest.fixture()
def legacy(stored: tuple[Path, dict[str, str]], tmp_path: Path) -> Path:
    """The older runs export of the same two runs."""
    path, ids = stored
    with SagStore(path, create=False) as store:
        write_run_export(store, [ids["sag"], ids["majority"]], tmp_path / "legacy", command="python -m sag run ...")
    return tmp_path / "legacy"


def test_the_export_holds_every_table_of_the_runs_and_no_store(stored: tuple[Path, dict[str, str]],
                                                               exported: Path) -> None:
    path, ids = stored
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["format"] == STORE_FORMAT and manifest["command"] == "python -m sag run ..."
    assert manifest["runs"] == sorted([ids["sag"], ids["majority"]]) and manifest["evaluations"] == []
    tables = {f["table"]: f["rows"] for f in manifest["files"]}
    assert {"sag_runs", "sag_items", "sag_messages", "sag_outcomes", "llm_calls"} <= set(tables)
    assert tables["sag_runs"] == 2 and not any(p.suffix == ".duckdb" for p in exported.iterdir())
    with SagStore(path, create=False) as store:
        stored_outcomes = store.outcomes(ids["sag"])
        messages = sum(len(store.messages(ids["sag"], i)) for i in stored_outcomes["item_id"])
        every = sum(len(store.messages(r, i)) for r in (ids["sag"], ids["majority"])
                    for i in store.outcomes(r)["item_id"])
    assert tables["sag_messages"] == every  # every message of the two runs, rationale and passages included
    export = read_run_export(exported)
    mine = export.outcomes_of(ids["sag"])
    assert list(mine["item_id"]) == list(stored_outcomes["item_id"])
    assert list(mine["answer"]) == list(stored_outcomes["answer"]) == ["B"] * GROUP_RUN_ITEMS
    answers = export.answers[export.answers["run_id"] == ids["sag"]]
    assert len(answers) == messages and set(answers["answer"].dropna()) == {"B", "C"}  # R2 holds C
    assert len(export.items_of(ids["majority"])) == GROUP_RUN_ITEMS


def test_the_older_runs_export_reads_as_before(stored: tuple[Path, dict[str, str]], legacy: Path,
                                               exported: Path) -> None:
    path, ids = stored
    assert sorted(p.name for p in legacy.iterdir()) == sorted(["manifest.json", *(f"{t}.parquet" for t in TABLES)])
    old, new = read_run_export(legacy), read_run_export(exported)
    assert old.manifest["format"] == FORMAT
    for run in (ids["sag"], ids["majority"]):
        pd.testing.assert_frame_equal(old.outcomes_of(run), new.outcomes_of(run), check_dtype=False)
    assert len(old.answers) == len(new.answers)


def test_report_reads_either_export_as_it_reads_the_store(stored: tuple[Path, dict[str, str]], exported: Path,
                                                          legacy: Path) -> None:
    path, ids = stored
    new = run_cli(["report", "--from-export", str(exported)])
    old = run_cli(["report", "--from-export", str(legacy)])
    assert new[0] == old[0] == 0 and new[1] == old[1]
    assert "sag-6-majority" in new[1] and "dcem" not in new[1]  # the two exported runs, not the third


def test_compare_reads_the_export_as_it_reads_the_store(stored: tuple[Path, dict[str, str]], exported: Path) -> None:
    path, ids = stored
    from_store = run_cli(["compare", ids["sag"], ids["majority"], "--db", str(path)])
    from_export = run_cli(["compare", ids["sag"], ids["majority"], "--export", str(exported)])
    assert from_store[0] == from_export[0] == 0
    assert from_export[1] == from_store[1] and "| C 100% |" in from_export[1]


def test_a_changed_store_form_file_is_refused(exported: Path, tmp_path: Path) -> None:
    changed = tmp_path / "changed-store"
    shutil.copytree(exported, changed)
    frame = pd.read_parquet(changed / "sag_outcomes.parquet")
    frame.loc[0, "answer"] = "A"
    frame.to_parquet(changed / "sag_outcomes.parquet", index=False)
    with pytest.raises(InputError, match="sag_outcomes.parquet has sha256 .* the file was modified or is corrupt"):
        read_run_export(changed)


def test_a_changed_missing_or_foreign_file_is_refused(legacy: Path, tmp_path: Path) -> None:
    exported = legacy
    changed = tmp_path / "changed"
    shutil.copytree(exported, changed)
    frame = pd.read_parquet(changed / "outcomes.parquet")
    frame.loc[0, "answer"] = "A"
    frame.to_parquet(changed / "outcomes.parquet", index=False)
    with pytest.raises(InputError, match="outcomes.parquet has sha256 .* the file was modified or is corrupt"):
        read_run_export(changed)
    (changed / "outcomes.parquet").unlink()
    with pytest.raises(InputError, match="outcomes.parquet is listed in the manifest but missing"):
        read_run_export(changed)
    (changed / "outcomes.parquet").symlink_to(exported / "outcomes.parquet")  # the right bytes, not its own file
    with pytest.raises(InputError, match="outcomes.parquet is a link"):
        read_run_export(changed)
    (changed / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="is not valid JSON"):
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
    assert "each once" in one_error_line(
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
    from sag.group.config import preset
    from sag.runs.run import SagRunSpec, run_sag

    from ..fakes import ScriptedTurns, constant

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
    from sag.runs.store_export import write_store_export

    write_store_export(path, tmp_path / "store-form", command="", run_ids=[summary.run_id])
    again = read_run_export(tmp_path / "store-form")
    entry = again.runs.iloc[0]
    assert (entry["items"], entry["answered"], entry["status"]) == (4, 2, "running")
    assert len(again.outcomes) == 2 and len(again.items) == 4


def test_shipped_exports_compare_each_group_with_the_first_run(exported: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from sag.runs.shipped_runs import group_comparisons
    from sag.runs.versus import versus_frame

    shipped = tmp_path / "sag_runs"
    shutil.copytree(exported, shipped / "heldout-x")
    monkeypatch.setattr("sag.runs.shipped_runs.runs_dir", lambda: shipped)
    found, problems = group_comparisons("sag-6-majority")
    assert problems == [] and len(found) == 1
    c = found[0]
    assert (c.export, c.benchmark) == ("heldout-x", "medqa") and c.base_run != c.run
    frame = versus_frame(list(c.rows))
    assert list(frame["Most frequent answer"]) == ["B", "C"] and frame.loc[0, "95 % paired bootstrap"] == "base"
    assert frame.loc[1, "Flag"] == "one answer > 50%" and frame.loc[1, "Items"] == GROUP_RUN_ITEMS
    assert group_comparisons("sag-6") == ([], [])  # the base run is compared with nothing
    (shipped / "heldout-x" / "sag_items.parquet").write_bytes(b"broken")
    found, problems = group_comparisons("sag-6-majority")
    assert found == [] and len(problems) == 1 and "heldout-x" in problems[0] and "sag_items.parquet" in problems[0]


def test_compare_an_export_alone_takes_its_first_run_as_the_base(stored: tuple[Path, dict[str, str]],
                                                                 exported: Path) -> None:
    path, ids = stored
    named = run_cli(["compare", ids["sag"], ids["majority"], "--export", str(exported)])
    alone = run_cli(["compare", "--export", str(exported)])
    assert alone[0] == 0 and alone[1] == named[1]
    assert "give the base run and at least one other" in one_error_line(*run_cli(["compare", "--db", str(path)]))
