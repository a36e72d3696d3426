"""The shipped adapters: each export reads back checked, its record shows the training
and the held-out gain, and llama.cpp gives torch's answers with the adapter on held-out
items: on 12 by default (the same letter on at least 11), on 50 with ``-m adapter_large``
(the issue's bar: the same letter on at least 48), each also compared with the measurement
recorded in data/results/training/agreement.json (benchmarks/adapter_agreement.py)."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from training.shipped import read_shipped, shipped_exports

log = logging.getLogger(__name__)
NAMES = [p.name for p in shipped_exports()]


def test_at_least_one_trained_adapter_is_shipped() -> None:
    assert NAMES, "no export in data/results/training/"


@pytest.mark.parametrize("name", NAMES)
def test_a_shipped_export_holds_a_finished_run_and_its_measurements(name: str) -> None:
    got = read_shipped(name)
    run = got.run
    assert run["status"] == "finished" and len(got.steps) == run["settings"]["steps"]
    if got.group_file is not None:  # a trained group is measured by playing it (python -m sag run, compare)
        from runtime.registry import resolve
        from sag.group.config import load_group_file

        group = load_group_file(got.group_file)
        assert set(got.adapter_keys) <= set(group.models())  # every agent's model, a view member's too
        assert all(resolve(key).is_file() for key in got.adapter_keys)
        if got.evals.empty:  # SAG-6: measured only by playing it; the view group's debate stage also on CAL
            assert got.answers.empty
            return
    assert sorted(set(got.evals["step"])) == [0, run["settings"]["steps"]]
    per_step = got.answers.groupby("step")["item_id"].count()
    assert list(per_step.index) == [0, run["settings"]["steps"]] and per_step.nunique() == 1


DIAGNOSTICIANS = [n for n in NAMES if read_shipped(n).run["kind"] == "diagnostician"]


@pytest.mark.parametrize("name", DIAGNOSTICIANS)
def test_llama_cpp_runs_a_shipped_diagnostician_as_torch_does(name: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _agree(name, tmp_path, monkeypatch, items=12, same_at_least=11)


@pytest.mark.adapter_large
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", DIAGNOSTICIANS)
def test_on_50_held_out_items_llama_cpp_gives_torchs_letter_on_48(name: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _agree(name, tmp_path, monkeypatch, items=50, same_at_least=48)


def _agree(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, items: int, same_at_least: int) -> None:
    """Measure again and compare with the bar and with the recorded measurement
    (data/results/training/agreement.json, the figures REPRODUCTION.md states)."""
    from dcem_clinical.adapter_agreement import measure_agreement
    from training.agreement import RECORD_NAME, recorded_agreement
    from training.shipped import exports_dir

    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path))
    got = measure_agreement(name, items, threads=1)
    log.info("%s: same letter on %d of %d, mean |torch - llama.cpp| %.4f, right: torch %d, llama.cpp %d", name,
             got["same_letter"], got["items"], got["mean_abs_diff"], got["torch_right"], got["llama_cpp_right"])
    assert got["items"] == items and got["same_letter"] >= same_at_least
    assert got["mean_abs_diff"] < 0.25
    recorded = recorded_agreement(exports_dir() / RECORD_NAME, name, items)
    assert recorded is not None, f"no recorded agreement of {name} on {items} items"
    assert recorded["same_letter"] >= same_at_least
    assert abs(got["same_letter"] - recorded["same_letter"]) <= 1  # letters within a hair of a tie may flip
    assert got["mean_abs_diff"] == pytest.approx(recorded["mean_abs_diff"], abs=0.01)


def test_the_models_page_example_as_reproduction_states_it() -> None:
    """REPRODUCTION.md: on the Models page's built-in example (a textbook myocardial
    infarction in prose) the first diagnostician answers URTI, the balanced one NSTEMI_STEMI."""
    from studio.views.model_lab_view import EXAMPLE_CASE, EXAMPLE_LABEL, load_model_uncached, run_test_prompt

    said = {}
    for name in ("ddxplus8-grpo", "ddxplus8-grpo-balanced"):
        loaded = load_model_uncached(f"smollm2-135m+lora:{name}", 0)
        said[name] = run_test_prompt(loaded, EXAMPLE_CASE, asked=loaded.loaded_at).label
    assert said == {"ddxplus8-grpo": "URTI", "ddxplus8-grpo-balanced": EXAMPLE_LABEL}
