"""A finished view-group stage run again returns its recorded group file and CAL figures."""
from __future__ import annotations

from pathlib import Path

from runtime.llama_backend import file_sha256
from sag.training.view_stages import _finished_stage
from training.store import TrainingStore


def test_a_finished_stage_returns_its_group_file_and_recorded_measurements(tmp_path: Path) -> None:
    group = tmp_path / "group-debate.json"
    group.write_text('{"name": "g"}', encoding="utf-8")
    with TrainingStore(tmp_path / "s.duckdb") as store:
        store.start_run("d1", kind="sag-view-debate", method="ctde", base_model="m", settings={}, data_name="d",
                        data_hash="h", n_train=4)
        assert _finished_stage(store, "d1", 3) is None  # still running
        for step, right in ((0, 1), (3, 3)):
            store.add_eval("d1", step, "cal:R1", 4, right, 8, "A", 0.5)
            store.add_eval("d1", step, "cal:plurality", 4, right - 1, 8, "B", 0.25)
        store.finish("d1", "finished", str(group), file_sha256(group))
        done = _finished_stage(store, "d1", 3)
        assert done is not None and done.group_file == group and not done.stopped and done.steps_done == 3
        assert done.measured == {"before R1": "0.250", "before plurality": "0.000", "after R1": "0.750",
                                 "after plurality": "0.500"}
        group.write_text('{"name": "edited"}', encoding="utf-8")
        assert _finished_stage(store, "d1", 3) is None  # the file is not the one recorded: trained path again
