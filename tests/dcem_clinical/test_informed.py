"""Few-shot retrieval and contextual calibration: pure parts, scripted agents, tiny runs."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clinical.datasets import ClinicalCase, load_dataset
from dcem.core.config import MediatorConfig
from common.errors import ConfigError, InputError
from dcem.store.database import Store
from dcem_clinical.agent import CALIBRATED, DiagnosticAgent
from dcem_clinical.call_log import call_cache_key, call_count
from dcem_clinical.cli import _parser
from dcem_clinical.contextual import CONTENT_FREE_INPUTS, FLOOR, calibrate, content_free_distribution
from dcem_clinical.few_shot import (TRUNCATION_MARK, ExampleIndex, FewShot, FewShotConfig, clip_text, fit_texts)
from dcem_clinical.informed import RecordingAgent, make_few_shot, turn_examples
from dcem_clinical.run import ClinicalSpec, run_clinical
from runtime.testing import ScriptedBackend
from tests.dcem_clinical.clinical_fakes import oracle_backend

LABELS = ("Anaphylaxis", "GERD", "URTI")
CASES = [ClinicalCase("c1", 0, "hives and lip swelling after peanuts, wheeze"),
         ClinicalCase("c2", 1, "burning chest pain after meals, sour taste"),
         ClinicalCase("c3", 2, "runny nose, sore throat and mild fever"),
         ClinicalCase("c4", 1, "heartburn at night lying down after meals"),
         ClinicalCase("c5", 2, "sneezing and cough, fever for two days")]


def _split(seed: int = 0) -> tuple[list[ClinicalCase], list[ClinicalCase]]:
    cal, test, _ = load_dataset("ddxplus8").split(seed, 20, 10)
    return list(cal), list(test)


def test_retrieval_never_returns_test_cases_or_the_query_itself() -> None:
    cal, test = _split()
    few = make_few_shot(cal, 3, 2048)
    assert few is not None and make_few_shot(cal, 0, 2048) is None
    cal_ids, test_ids = {c.source_id for c in cal}, {c.source_id for c in test}
    for case in cal + test:
        hits = few.index.search(case.text, 3)
        ids = [c.source_id for c, _ in hits]
        assert len(ids) == 3 and set(ids) <= cal_ids and not set(ids) & test_ids
        assert case.source_id not in ids  # a CAL case never sees its own label
    assert len(few.index.search(cal[0].text, 50)) == len(cal) - 1
    assert few.index.search(cal[0].text, 0) == []
    excluded = few.index.search(test[0].text, 3, exclude_ids=[few.index.search(test[0].text, 1)[0][0].source_id])
    assert len(excluded) == 3 and excluded[0][0].source_id != few.index.search(test[0].text, 1)[0][0].source_id


def test_ranks_are_deterministic_and_ordered_by_score() -> None:
    index = ExampleIndex(CASES)
    first = index.search("fever and sore throat after meals", 4)
    again = ExampleIndex(list(CASES)).search("fever and sore throat after meals", 4)
    assert [(c.source_id, s) for c, s in first] == [(c.source_id, s) for c, s in again]
    scores = [s for _, s in first]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert first[0][0].source_id == "c3"
    # no shared word: every score 0, ties in index order
    assert [c.source_id for c, _ in index.search("xyzzy", 3)] == ["c1", "c2", "c3"]
    with pytest.raises(InputError):
        ExampleIndex([CASES[0], CASES[0]])
    with pytest.raises(InputError):
        index.search("x", -1)


def test_examples_fit_the_budget_and_are_truncated_deterministically() -> None:
    text, cut = clip_text("one two three four five six seven eight nine ten " * 10, 60)
    assert cut and len(text) <= 60 and text.endswith(TRUNCATION_MARK)
    assert clip_text("short text", 60) == ("short text", False)
    assert fit_texts(["a" * 50, "b" * 500, "c" * 500], 650, 800) == [50, 300, 300]
    assert fit_texts(["a" * 500] * 3, 200, 800) is None  # each would get 66 < 120
    long_cases = [ClinicalCase(f"x{i}", i % 3, f"fever cough {i} " + "word " * 400) for i in range(4)]
    few = FewShot(long_cases, FewShotConfig(k=3, n_ctx=1024, max_example_chars=800))
    agent = DiagnosticAgent(ScriptedBackend(), LABELS, few_shot=few)
    query = "fever cough " + "finding " * 100
    msgs = agent.messages(query)
    total = sum(len(m.content) for m in msgs)
    shown = agent.examples(query)
    assert 1 <= len(shown) <= 3 and total <= few.config.budget_chars
    assert all(e.truncated and e.text.endswith(TRUNCATION_MARK) for e in shown)
    assert agent.messages(query) == msgs  # deterministic
    # a case that fills the context by itself gets no examples
    assert agent.examples("fever cough " * 900) == []
    with pytest.raises(ConfigError):
        FewShotConfig(k=-1)


def test_calibration_divides_renormalises_and_floors() -> None:
    p, cf = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.3, 0.1])
    q = calibrate(p, cf)
    expected = (p / cf) / (p / cf).sum()
    assert q == pytest.approx(expected, abs=1e-12) and q.sum() == pytest.approx(1.0)
    assert int(np.argmax(q)) == 2  # the bias towards A is removed
    floored = calibrate([0.4, 0.4, 0.2], [0.5, 0.5, 0.0])
    raw = np.array([0.4, 0.4, 0.2]) / np.array([0.5, 0.5, FLOOR])
    assert floored == pytest.approx(raw / raw.sum()) and np.all(np.isfinite(floored)) and np.all(floored > 0)
    assert content_free_distribution([[1, 0, 1], [0, 2, 0]]) == pytest.approx([0.25, 0.5, 0.25])
    with pytest.raises(InputError):
        calibrate([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(InputError):
        calibrate([float("nan"), 1.0], [0.5, 0.5])


def _biased_scores(messages: object, options: object) -> list[float]:
    return [math.log(0.6), math.log(0.3), math.log(0.1)]


def test_calibrated_agent_fits_content_free_once_and_divides() -> None:
    backend = ScriptedBackend(scores=_biased_scores)
    agent = DiagnosticAgent(backend, LABELS, mode=CALIBRATED)
    report = agent.classify("burning pain after meals")
    assert len(backend.calls) == len(CONTENT_FREE_INPUTS) + 1
    asked = [c[1][-1].content.split("Case:\n")[1].split("\n\n")[0] for c in backend.calls[1:4]]
    assert asked == list(CONTENT_FREE_INPUTS)
    assert agent.content_free == pytest.approx([0.6, 0.3, 0.1])
    assert report.probabilities == pytest.approx([1 / 3] * 3)  # a pure prompt bias is removed
    assert report.extra["raw_probabilities"] == pytest.approx([0.6, 0.3, 0.1])
    agent.classify("x")
    assert len(backend.calls) == len(CONTENT_FREE_INPUTS) + 2  # fitted once
    given = DiagnosticAgent(backend, LABELS, mode=CALIBRATED, content_free=[2, 1, 1])
    assert given.content_free == pytest.approx([0.5, 0.25, 0.25])


def test_few_shot_prompt_shows_solved_cases_and_records_them(tmp_path: Path) -> None:
    backend = ScriptedBackend(scores=_biased_scores)
    few = FewShot(CASES, FewShotConfig(k=2))
    with Store(tmp_path / "s.duckdb") as store:
        logged = RecordingAgent(DiagnosticAgent(backend, LABELS, few_shot=few), store)
        report, cached = logged.classify(CASES[2].text)
        user = report.messages[-1].content
        assert not cached and "Solved example 1:" in user and "Solved example 2:" in user
        assert CASES[4].text in user and "Correct category: C. URTI" in user
        assert user.index("Solved example") < user.index("Case:\n") and CASES[2].text not in user.split("Case:\n")[0]
        row = store.con.execute("SELECT parsed_json FROM llm_calls WHERE purpose = 'classify'").fetchone()
        examples = json.loads(row[0])["examples"]
        assert [e["rank"] for e in examples] == [2, 1] and examples[-1]["source_id"] == "c5"
        assert examples[-1]["label_name"] == "URTI" and examples[-1]["score"] > 0
        plain = DiagnosticAgent(backend, LABELS)
        assert call_cache_key(plain, "classify", plain.messages(CASES[2].text)) != logged.last_key


def test_content_free_calls_are_logged_and_answered_from_the_log(tmp_path: Path) -> None:
    backend = ScriptedBackend(scores=_biased_scores)
    with Store(tmp_path / "cf.duckdb") as store:
        first = RecordingAgent(DiagnosticAgent(backend, LABELS, mode=CALIBRATED), store, run_id="r1")
        assert len(backend.calls) == 3 and call_count(store, "r1") == 3
        second = RecordingAgent(DiagnosticAgent(backend, LABELS, mode=CALIBRATED), store, run_id="r2")
        assert len(backend.calls) == 3  # no model call: the log answers
        assert second.agent.content_free == pytest.approx(first.agent.content_free)
        assert second.info()["content_free"] == pytest.approx([0.6, 0.3, 0.1])
        scored = DiagnosticAgent(backend, LABELS)
        calibrated = DiagnosticAgent(backend, LABELS, mode=CALIBRATED)
        msgs = scored.messages("x")
        assert call_cache_key(scored, "classify", msgs) != call_cache_key(calibrated, "classify", msgs)


def _spec(**kw: object) -> ClinicalSpec:
    base = dict(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=10, n_test=6, agents=("fake-a", "fake-b"),
                base_config=MediatorConfig(prior="empirical", t_max=2), free_rounds=1)
    return ClinicalSpec(**{**base, **kw})  # type: ignore[arg-type]


def _fakes() -> list[ScriptedBackend]:
    return [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=6, tag="b")]


def _calls(backends: list[ScriptedBackend]) -> int:
    return sum(len(b.calls) for b in backends)


@pytest.mark.parametrize("options", [{"few_shot_k": 3}, {"mode": CALIBRATED}, {"few_shot_k": 2, "mode": CALIBRATED}])
def test_tiny_runs_with_each_option_complete_differ_and_resume(tmp_path: Path, options: dict[str, object]) -> None:
    spec = _spec(**options)
    assert spec.run_id() != _spec().run_id() and "few_shot_k" not in _spec().to_dict()
    with Store(tmp_path / "run.duckdb") as store:
        run_clinical(store, _spec(), backends=_fakes())  # the same cell without the option, logged first
        backends = _fakes()
        summary = run_clinical(store, spec, backends=backends)
        assert summary.complete and _calls(backends) > 0  # calls of another setting do not answer
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?",
                                            [summary.run_id]).fetchone()[0])
        assert info["mode"] == spec.mode
        for agent in info["agents"]:
            assert ("content_free" in agent) == (spec.mode == CALIBRATED)
            assert ("few_shot" in agent) == (spec.few_shot_k > 0)
        case = store.con.execute("SELECT min(case_id) FROM agent_turns WHERE run_id = ?",
                                 [summary.run_id]).fetchone()[0]
        shown = turn_examples(store, summary.run_id, case, "dcem")
        assert (len(shown) > 0) == (spec.few_shot_k > 0)
        assert all(len(g) == spec.few_shot_k for _, g in shown.groupby(["round", "agent"]))
        cal, test, _ = load_dataset("ddxplus8").split(0, 10, 6)
        assert set(shown["source_id"]) <= {c.source_id for c in cal}
        assert not set(shown["source_id"]) & {c.source_id for c in test}
        # the same cell from scratch under another run id: the log answers every call
        rows, fresh = call_count(store), _fakes()
        again = run_clinical(store, ClinicalSpec(**{**spec.__dict__, "n_ctx": 4096}), backends=fresh)
        assert again.computed == 1 and _calls(fresh) == 0 and call_count(store) == rows


def test_cli_flags_reach_the_spec() -> None:
    args = _parser().parse_args(["run", "--few-shot", "3", "--mode", "scored-calibrated"])
    assert args.few_shot == 3 and args.mode == CALIBRATED
    assert _parser().parse_args(["run"]).few_shot == 0


def test_building_an_example_index_prints_no_debug_line() -> None:
    code = ("import logging; logging.basicConfig(level=logging.DEBUG)\n"
            "from clinical.datasets import load_dataset\n"
            "from dcem_clinical.few_shot import ExampleIndex\n"
            "cal, _, _ = load_dataset('ddxplus8').split(0, 10, 6)\n"
            "print(len(ExampleIndex(cal)))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "10" and "Building index" not in done.stderr
