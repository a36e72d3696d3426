"""No evaluation of the project reads a TRAIN item: the SAG suite and its calibration, the
SAG runs' draws, the D-CEM clinical CAL/TEST splits (each built by its own code here)."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinical.datasets import DATASETS, load_dataset
from clinical.questions import QuestionItem, load_benchmark
from clinical.safety_requests import BENIGN_PREFIX, HARMFUL_PREFIX
from clinical.training_reserved import agentclinic_sources
from clinical.training_split import BENCHMARKS, train_id_set, training_split
from common.errors import ConfigError
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.run import ClinicalSpec, run_clinical
from sag.group.config import preset
from sag.evaluation.runner import calibration_items
from sag.evaluation.subsets import load_subsets
from sag.evaluation.suite import SuiteSpec, build_parts
from sag.runs.run import SagRunSpec
from tests.dcem_clinical.clinical_fakes import oracle_backend

_DATASET_BENCHMARK = {"ddxplus8": "ddxplus8", "medqa-tri": "medqa"}  # MedQA-Tri items are MedQA items


def _source(item: QuestionItem) -> tuple[str, str]:
    """(training benchmark, id) an evaluated item comes from; perturbed copies name their source."""
    source = item.meta_value("source_id", item.item_id)
    if item.benchmark == "safety":
        if source.startswith(HARMFUL_PREFIX):
            return "medsafetybench", source
        return "medmcqa", source[len(BENIGN_PREFIX):]  # an MMLU id never names a MedMCQA question
    return item.benchmark, source


def _suite_items() -> list[QuestionItem]:
    """Every item the full-size suite asks, and every calibration item its D-CEM groups read."""
    subsets = load_subsets()
    parts = build_parts(SuiteSpec(n_items=100, consistency_items=100, k_runs=1, k_cr=1), subsets)
    items = [it for part in parts for it in part.items]
    for source in {part.calibration_source for part in parts}:
        n = len(subsets.safety("calibration") if source == "safety" else subsets.calibration_ids(source))
        items += calibration_items(source, subsets, n)
    return items


def test_the_sag_suite_reads_no_train_item() -> None:
    items = _suite_items()
    seen: dict[str, set[str]] = {}
    for item in items:
        benchmark, source = _source(item)
        seen.setdefault(benchmark, set()).add(source)
    assert {"medqa", "medmcqa", "pubmedqa", "medsafetybench", "agentclinic"} <= set(seen)
    for benchmark in BENCHMARKS:
        assert not seen.get(benchmark, set()) & train_id_set(benchmark), benchmark
        if benchmark != "ddxplus8":  # HELD-OUT is fresh for the trained-versus-untrained comparison
            assert not seen.get(benchmark, set()) & set(training_split(benchmark).heldout_ids), benchmark
    asked = tuple(it for it in items if it.benchmark == "agentclinic")
    assert not agentclinic_sources(load_benchmark("medqa"), asked) & train_id_set("medqa")


@pytest.mark.parametrize("benchmark", ["medqa", "medmcqa", "pubmedqa", "ddxplus8"])
def test_a_sag_run_draws_only_outside_train(benchmark: str) -> None:
    """``python -m sag run --benchmark B --items N``: N as large as the run allows takes
    every item it can ever draw; one more is refused."""
    cfg = preset("single")
    items = load_benchmark(benchmark)
    allowed = len(items) - len(train_id_set(benchmark) & {it.item_id for it in items})
    evaluation, _ = SagRunSpec(benchmark, cfg, n_items=allowed, seed=0).prepare()
    assert len(evaluation) == allowed and not {it.item_id for it in evaluation} & train_id_set(benchmark)
    for seed in (0, 1, 2):
        drawn, cal = SagRunSpec(benchmark, preset("sag-6-dcem"), n_items=20, seed=seed).prepare()
        assert not {it.item_id for it in drawn + cal} & train_id_set(benchmark)
    with pytest.raises(ConfigError, match="kept for training" if allowed < len(items) else "items"):
        SagRunSpec(benchmark, cfg, n_items=allowed + 1, seed=0).prepare()


@pytest.mark.parametrize("dataset", DATASETS)
def test_clinical_splits_draw_only_outside_train(dataset: str) -> None:
    data, train = load_dataset(dataset), train_id_set(_DATASET_BENCHMARK[dataset])
    drawn: set[str] = set()
    for seed in range(5):
        cal, test, _ = data.split(seed)
        drawn |= {c.source_id for c in cal + test}
    cal, test, _ = data.split(0, len(data.cases), len(data.cases))  # as large as the pool allows
    drawn |= {c.source_id for c in cal + test}
    assert not drawn & train
    assert drawn == {c.source_id for c in data.pool}
    if dataset == "ddxplus8":  # the D-CEM pool is DDXPlus's HELD-OUT
        assert drawn == set(training_split("ddxplus8").heldout_ids)


def test_a_clinical_run_stores_only_cases_outside_train(tmp_path: Path) -> None:
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=24, n_test=24,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=2),
                        free_rounds=1)
    with Store(tmp_path / "s.duckdb") as store:
        run_clinical(store, spec, backends=[oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", tag="b")])
        stored = {r[0] for r in store.con.execute("SELECT DISTINCT source_id FROM case_texts").fetchall()}
    _, test, _ = load_dataset("ddxplus8").split(0, 24, 24)
    assert stored == {c.source_id for c in test} and not stored & train_id_set("ddxplus8")  # the TEST cases
