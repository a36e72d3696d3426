"""Few-shot and calibrated agents on the packaged SmolLM2 (one thread, a handful of cases)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from clinical.datasets import load_dataset
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.agent import CALIBRATED, DiagnosticAgent
from dcem_clinical.informed import make_few_shot, turn_examples
from dcem_clinical.prompts import letters
from dcem_clinical.run import ClinicalSpec, make_backend, run_clinical
from runtime.llama_backend import LlamaCppBackend
from tests.dcem_clinical.clinical_fakes import oracle_backend

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python missing")]

DATA = load_dataset("ddxplus8")
CAL, TEST, _ = DATA.split(0, 20, 10)


@pytest.fixture(scope="module")
def backend() -> LlamaCppBackend:
    b = make_backend("smollm2-135m", n_ctx=2048, n_threads=1)
    assert isinstance(b, LlamaCppBackend)
    return b


def test_few_shot_prompt_carries_the_retrieved_cal_cases_within_the_context(backend: LlamaCppBackend) -> None:
    agent = DiagnosticAgent(backend, DATA.labels, few_shot=make_few_shot(CAL, 3, 1024))  # shorter, faster
    plain = DiagnosticAgent(backend, DATA.labels)
    tags, cal_ids = letters(len(DATA.labels)), {c.source_id for c in CAL}
    for case in TEST[:2]:
        report = agent.classify(case.text)
        user = report.messages[-1].content
        shown = agent.examples(case.text)
        assert len(shown) == 3 and [e["source_id"] for e in report.extra["examples"]] == [e.source_id for e in shown]
        assert {e.source_id for e in shown} <= cal_ids
        for e in shown:
            assert e.text in user and f"Correct category: {tags[e.label]}. {DATA.labels[e.label]}" in user
        assert report.error is None and abs(report.probabilities.sum() - 1) < 1e-9
        assert len(backend.prompt_tokens(plain.messages(case.text))) < report.prompt_tokens <= 1024
    # the longest cases with small contexts: examples are cut or dropped, the prompt fits
    longest = sorted(DATA.cases, key=lambda c: -len(c.text))[:5]
    for n_ctx in (768, 1024):
        small = DiagnosticAgent(backend, DATA.labels, few_shot=make_few_shot(CAL, 3, n_ctx))
        for case in longest:
            assert len(backend.prompt_tokens(small.messages(case.text))) <= n_ctx


def test_calibrated_vector_is_raw_divided_by_content_free(backend: LlamaCppBackend) -> None:
    raw_agent = DiagnosticAgent(backend, DATA.labels)
    agent = DiagnosticAgent(backend, DATA.labels, mode=CALIBRATED)
    for case in TEST[:2]:
        raw = raw_agent.classify(case.text).probabilities
        report = agent.classify(case.text)
        assert agent.content_free is not None
        expected = (raw / agent.content_free) / (raw / agent.content_free).sum()
        assert np.abs(report.probabilities - expected).max() < 1e-9
        assert np.abs(report.probabilities - raw).max() > 1e-3
        assert report.extra["raw_probabilities"] == pytest.approx(raw.tolist(), abs=1e-12)


@pytest.mark.parametrize("options", [{"few_shot_k": 1, "n_ctx": 1024}, {"mode": CALIBRATED}])
def test_tiny_real_runs_with_each_option(tmp_path: Path, backend: LlamaCppBackend,
                                         options: dict[str, object]) -> None:
    """Agent A is SmolLM2, agent B a scripted model (keeps the real calls to a handful)."""
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=2, n_test=1,
                        agents=("smollm2-135m", "fake-b"),
                        base_config=MediatorConfig(prior="empirical", t_max=1), free_rounds=1,
                        **options)  # type: ignore[arg-type]
    with Store(tmp_path / "real.duckdb") as store:
        summary = run_clinical(store, spec, backends=[backend, oracle_backend("ddxplus8", tag="b")])
        assert summary.complete
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?",
                                            [summary.run_id]).fetchone()[0])
        if spec.mode == CALIBRATED:
            cf = info["agents"][0]["content_free"]
            assert len(cf) == len(DATA.labels) and abs(sum(cf) - 1) < 1e-9 and min(cf) > 0
        else:
            case = store.con.execute("SELECT min(case_id) FROM agent_turns WHERE run_id = ?",
                                     [summary.run_id]).fetchone()[0]
            shown = turn_examples(store, summary.run_id, case, "dcem")
            real = shown[shown["agent"] == 0]
            assert len(real) == 1 and set(real["source_id"]) <= {c.source_id for c in DATA.split(0, 2, 1)[0]}
        errors = store.con.execute("SELECT count(*) FROM agent_turns WHERE run_id = ? AND error IS NOT NULL",
                                   [summary.run_id]).fetchone()[0]
        assert errors == 0
