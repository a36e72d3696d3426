"""Models page, trained adapters: the runs, their curves and the held-out accuracy beside
chance and the answer distribution, read from the store."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from training.store import StepRow, TrainingStore

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "models.py")


def test_an_empty_store_says_no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "empty.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("No training run of your own is stored yet" in i.value for i in at.info)


def test_a_finished_run_shows_its_key_curves_and_flagged_heldout(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("training.shipped.exports_dir", lambda: tmp_path / "no-exports")
    db = tmp_path / "t.duckdb"
    with TrainingStore(db) as store:
        store.start_run("r1", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 2}, data_name="ddxplus8:train", data_hash="h", n_train=495)
        for k in (1, 2):
            store.add_step("r1", StepRow(k, 0.1, -0.5 + k / 10, 0.5, 0.01, 0.0, 8, 2500, 12.0))
        store.add_eval("r1", 0, "heldout", 200, 26, 8, "A", 0.98)
        store.add_eval("r1", 2, "heldout", 200, 120, 8, "C", 0.3)
        store.add_answers("r1", 0, "heldout", [(f"i{k}", "A", "ABC"[k % 3]) for k in range(30)])
        store.add_answers("r1", 2, "heldout", [(f"i{k}", "ABC"[k % 3], "ABC"[k % 3]) for k in range(30)])
        store.finish("r1", "finished", "runs/train/r1/adapter.gguf", "ab" * 32)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("smollm2-135m+lora:file:runs/train/r1/adapter.gguf" in c.value for c in at.code)
    frames = [t.value for t in at.dataframe]
    held = next(f for f in frames if "Held-out set" in f.columns)
    runs = next(f for f in frames if "Steps done" in f.columns)
    assert list(held["Chance"]) == pytest.approx([0.125, 0.125])
    assert held.loc[0, "Flag"] != "" and held.loc[1, "Flag"] == ""
    assert runs.loc[0, "Steps done"] == "2 of 2"
    paired = next(f for f in frames if "Difference" in f.columns)
    assert paired.loc[0, "Before"] == pytest.approx(1 / 3) and paired.loc[0, "After"] == 1.0
    assert paired.loc[0, "Excludes 0"] == "yes"


def test_a_shipped_adapter_shows_its_key_record_and_paired_gain(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from training.export import write_training_export

    db, adapter = tmp_path / "t.duckdb", tmp_path / "adapter.gguf"
    adapter.write_bytes(b"adapter")
    with TrainingStore(db) as store:
        store.start_run("r9", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 1}, data_name="ddxplus8:train", data_hash="h", n_train=495)
        store.add_step("r9", StepRow(1, 0.1, 0.2, 0.5, 0.01, 0.0, 8, 2500, 12.0))
        store.add_eval("r9", 0, "heldout", 40, 10, 8, "A", 1.0)
        store.add_eval("r9", 1, "heldout", 40, 30, 8, "B", 0.25)
        store.add_answers("r9", 0, "heldout", [(f"i{k}", "A", "ABCD"[k % 4]) for k in range(40)])
        store.add_answers("r9", 1, "heldout", [(f"i{k}", "ABCD"[k % 4] if k % 4 else "B", "ABCD"[k % 4])
                                               for k in range(40)])
        store.finish("r9", "finished", str(adapter), hashlib.sha256(b"adapter").hexdigest())
        write_training_export(store, "r9", tmp_path / "exports" / "ddx-x", tmp_path / "adapters", "ddx-x",
                              command="python -m dcem_clinical train --steps 1")
    monkeypatch.setattr("training.shipped.exports_dir", lambda: tmp_path / "exports")
    monkeypatch.setattr("training.shipped.adapters_dir", lambda: tmp_path / "adapters")
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any(c.value == "smollm2-135m+lora:ddx-x" for c in at.code)
    frames = [t.value for t in at.dataframe]
    paired = next(f for f in frames if "Difference" in f.columns)
    assert paired.loc[0, "Before"] == 0.25 and paired.loc[0, "After"] == 0.75 and paired.loc[0, "Excludes 0"] == "yes"
    held = next(f for f in frames if "Held-out set" in f.columns)
    assert held.loc[0, "Flag"] != "" and held.loc[1, "Flag"] == ""
    assert any("No training run of your own is stored yet" in i.value for i in at.info)
    (tmp_path / "adapters" / "ddx-x.gguf").write_bytes(b"changed")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception and any("cannot be read" in e.value and "modified or is corrupt" in e.value
                                    for e in at.error)


def test_a_trained_group_shows_its_curves_and_the_command_that_plays_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("training.shipped.exports_dir", lambda: tmp_path / "no-exports")
    db = tmp_path / "t.duckdb"
    with TrainingStore(db) as store:
        store.start_run("g1", kind="sag-group", method="ctde", base_model="smollm2-135m",
                        settings={"steps": 3}, data_name="medsafetybench:train", data_hash="h", n_train=800)
        for k in (1, 2, 3):
            store.add_step("g1", StepRow(k, 0.0, -2.0 + k, 0.5, 0.0, 0.0, 2, 9000, 300.0))
        store.finish("g1", "finished", "runs/train/g1/group.json", "cd" * 32)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    codes = [c.value for c in at.code]
    assert "python -m sag run --group runs/train/g1/group.json --benchmark medqa" in codes
    assert not any("+lora:file:runs/train/g1/group.json" in c for c in codes)  # a group file is no adapter
    assert any("Each role" not in c.value and "trained group" in c.value for c in at.caption)
    runs = next(t.value for t in at.dataframe if "Steps done" in t.value.columns)
    assert runs.loc[0, "Steps done"] == "3 of 3"


def test_a_shipped_trained_group_shows_the_command_that_plays_its_group_file(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import json

    from training.export import write_training_export

    adapter = tmp_path / "run" / "adapter-default.gguf"
    adapter.parent.mkdir()
    adapter.write_bytes(b"adapter")
    group = tmp_path / "run" / "group.json"
    group.write_text(json.dumps({"name": "x", "backbones": [f"smollm2-135m+lora:file:{adapter}"] * 2}))
    db = tmp_path / "t.duckdb"
    with TrainingStore(db) as store:
        store.start_run("g2", kind="sag-group", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 1}, data_name="ddxplus8:train", data_hash="h", n_train=4)
        store.add_step("g2", StepRow(1, 0.0, -1.0, 0.5, 0.0, 0.0, 2, 9000, 300.0))
        store.finish("g2", "finished", str(group), hashlib.sha256(group.read_bytes()).hexdigest())
        write_training_export(store, "g2", tmp_path / "exports" / "sag6-grpo", tmp_path / "adapters", "sag6-grpo",
                              command="python -m sag train --group sag-6")
    monkeypatch.setattr("training.shipped.exports_dir", lambda: tmp_path / "exports")
    monkeypatch.setattr("training.shipped.adapters_dir", lambda: tmp_path / "adapters")
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    want = f"python -m sag run --group {tmp_path / 'exports' / 'sag6-grpo' / 'group.json'} --benchmark medqa"
    assert want in [c.value for c in at.code]
    assert any("trained group" in c.value for c in at.caption)


def test_a_shipped_trained_group_shows_its_shipped_heldout_runs_against_the_untrained_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import json

    from sag.store.tables import SagStore
    from sag.runs.run_export import write_run_export
    from tests.sag.group_runs import build_group_runs
    from training.export import write_training_export

    adapter = tmp_path / "run" / "adapter-default.gguf"
    adapter.parent.mkdir()
    adapter.write_bytes(b"adapter")
    group = tmp_path / "run" / "group.json"
    group.write_text(json.dumps({"name": "x", "backbones": [f"smollm2-135m+lora:file:{adapter}"] * 2}))
    with TrainingStore(tmp_path / "t.duckdb") as store:
        store.start_run("g3", kind="sag-group", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 1}, data_name="ddxplus8:train", data_hash="h", n_train=4)
        store.add_step("g3", StepRow(1, 0.0, -1.0, 0.5, 0.0, 0.0, 2, 9000, 300.0))
        store.finish("g3", "finished", str(group), hashlib.sha256(group.read_bytes()).hexdigest())
        # the export names the group after itself: the scripted runs' "sag-6-majority" group
        write_training_export(store, "g3", tmp_path / "exports" / "sag-6-majority", tmp_path / "adapters",
                              "sag-6-majority", command="python -m sag train --group sag-6")
    monkeypatch.setattr("training.shipped.exports_dir", lambda: tmp_path / "exports")
    monkeypatch.setattr("training.shipped.adapters_dir", lambda: tmp_path / "adapters")
    monkeypatch.setattr("sag.runs.shipped_runs.runs_dir", lambda: tmp_path / "sag_runs")
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("No shipped held-out run of this group yet" in c.value for c in at.caption)
    runs = build_group_runs(tmp_path / "sag.duckdb", tmp_path / "idx")
    with SagStore(tmp_path / "sag.duckdb", create=False) as store:
        write_run_export(store, [runs["sag"].run_id, runs["majority"].run_id], tmp_path / "sag_runs" / "heldout-x",
                         command="python -m sag run ...")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    table = next(t.value for t in at.dataframe if "Run - base" in t.value.columns)
    assert list(table["Most frequent answer"]) == ["B", "C"]
    assert table.loc[1, "Run"].startswith("sag-6-majority (") and table.loc[1, "Flag"] != ""
    assert any("heldout" in m.value and "medqa" in m.value for m in at.markdown)


def test_the_shipped_adapters_say_what_they_are_for_and_flag_a_class_never_recognised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51: on the shipped records, a table of what each adapter is for, expects and was
    measured on; the diagnostician's recall per class beside its 94.5 %, Myocarditis in red;
    and the store's own (empty) runs under their heading, not under the shipped curves."""
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    at.selectbox(key="models_shipped_pick").set_value("ddxplus8-grpo").run()
    assert not at.exception
    frames = [t.value for t in at.dataframe]
    guide = next(f for f in frames if "Expects" in f.columns).set_index("Shipped export")
    assert "ddxplus8-grpo" in guide.index and "never on prose" in guide.loc["ddxplus8-grpo", "Expects"]
    assert "data/results/dcem_clinical_trio" in guide.loc["ddxplus8-grpo", "Measured in"]
    recall = next(f for f in frames if "Recall after" in f.columns).set_index("Class")
    assert recall.loc["Myocarditis", "Recall after"] == 0.0 and recall.loc["URTI", "Recall after"] == 1.0
    red = [m.value for m in at.markdown if m.value.startswith(":red[")]
    assert red == [":red[heldout: Never diagnoses Myocarditis: 0 of its 9 held-out cases right; it never answers "
                   "Myocarditis.]"]
    marks = [m.value for m in at.markdown]
    assert marks.index("**Your training runs** (the result store)") > max(i for i, m in enumerate(marks) if m in red)


def test_the_view_groups_debate_record_flags_each_member_that_never_names_a_diagnosis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52: recall per class for every trained agent of the view group, a class never
    right in red words, member by member."""
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.selectbox(key="models_shipped_pick").set_value("ddx-views-debate").run()
    assert not at.exception
    red = [m.value for m in at.markdown if m.value.startswith(":red[")]
    assert ":red[cal:R1: Never diagnoses Myocarditis: 0 of its 5 held-out cases right; it never answers Myocarditis.]" in red
    assert not any(r.startswith(":red[cal:R2:") for r in red)  # R2 names every diagnosis
    guide = next(t.value for t in at.dataframe if "Expects" in t.value.columns).set_index("Shipped export")
    assert "nothing else of the case" in guide.loc["ddx-views-debate", "Expects"]
