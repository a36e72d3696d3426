"""Scored from stored runs of scripted agents: FLOPs count the tokens of a reused prefix, a
group whose turns came from the call log has a latency, and a group answering one letter
is flagged beside its CDR, CR and std in the export, the report and the page's tables."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest

from runtime.turns import TurnRequest, TurnResult
from sag.group.config import preset
from sag.evaluation.export import build_export
from sag.evaluation.export_check import check_export
from sag.evaluation.runner import run_group_eval
from sag.evaluation.scores import score_evaluation
from sag.evaluation.suite import SuiteSpec
from sag.evaluation.tables import DOMINANT_FLAG, render_report
from studio.views.sag_eval_view import metric_frames
from sag.store.eval_tables import eval_parts, record_cost, run_messages
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns, constant, logprobs_for

PARAMETERS = 1_000
TURN_SECONDS = 600.0  # what every scripted call reports having taken (far above its real time, on any machine)


class ReusingTurns(ScriptedTurns):
    """Scripted turns that report reusing all but one prompt token and taking TURN_SECONDS;
    the chosen option gets 0.97 (sampled runs keep it)."""

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        out = []
        for request, r in zip(requests, super().run(requests)):
            chosen = request.options[max(range(len(r.logprobs)), key=r.logprobs.__getitem__)]
            out.append(TurnResult(logprobs=logprobs_for(request.options, chosen, 0.97), text=r.text,
                                  prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens,
                                  reused_tokens=max(0, r.prompt_tokens - 1), duration_s=TURN_SECONDS))
        return out


def _run(store: SagStore, spec: SuiteSpec, name: str, answer: str = "A") -> None:
    cfg = preset(name)
    runner = ReusingTurns(constant(answer))
    summary = run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False)
    assert summary.complete
    weights = {"models": {m: {"mb": 1.0, "parameters": PARAMETERS} for m in cfg.models()},
               "agents": {m: 1 for m in cfg.models()}}
    record_cost(store, eval_id=spec.eval_id, group=name, peak_rss_mb=100.0, weights=weights)


@pytest.fixture(scope="module")
def accuracy_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SuiteSpec]:
    """sag-6, then sag-6-no_judge, whose round 0 and round 1 debate repeat sag-6's calls."""
    spec = SuiteSpec("accuracy", n_items=2)
    path = tmp_path_factory.mktemp("cost") / "eval.duckdb"
    with SagStore(path) as store:
        for name in ("sag-6", "sag-6-no_judge"):
            _run(store, spec, name)
    return path, spec


def _accuracy_messages(store: SagStore, eval_id: str, group: str) -> list[Any]:
    parts = eval_parts(store, eval_id)
    runs = parts[(parts["group_name"] == group) & parts["part"].str.startswith("accuracy/")]["run_id"]
    return [run_messages(store, r) for r in runs]


def test_flops_count_every_prompt_token_also_those_of_a_reused_prefix(accuracy_store: tuple[Path, SuiteSpec]) -> None:
    path, spec = accuracy_store
    with SagStore(path) as store:
        scored = score_evaluation(store, spec.eval_id)
        frames = _accuracy_messages(store, spec.eval_id, "sag-6")
    dep = scored["groups"]["sag-6"]["deployment"]
    evaluated = sum(int((m["prompt_tokens"] + m["completion_tokens"]).sum()) for m in frames)
    reused = sum(int(m["reused_tokens"].sum()) for m in frames)
    assert reused > 0.5 * evaluated  # the runtime reused most of the prompt...
    assert dep["flops_per_item"] == pytest.approx(2.0 * PARAMETERS * evaluated / dep["items"])  # ...and all counts
    assert dep["tokens_per_item"] == pytest.approx(evaluated / dep["items"])
    assert dep["processed_tokens_per_item"] == pytest.approx((evaluated - reused) / dep["items"])
    assert dep["flops_per_item"] == pytest.approx(2.0 * PARAMETERS * dep["tokens_per_item"])


def test_a_group_whose_turns_came_from_the_call_log_has_a_latency(accuracy_store: tuple[Path, SuiteSpec]) -> None:
    path, spec = accuracy_store
    with SagStore(path) as store:
        scored = score_evaluation(store, spec.eval_id)
        parts = eval_parts(store, spec.eval_id)
        runs = parts[(parts["group_name"] == "sag-6-no_judge") & parts["part"].str.startswith("accuracy/")]["run_id"]
        wall = [float(s) for r in runs for s in store.outcomes(r)["seconds"]]
        cached = [int(c) for r in runs for c in store.outcomes(r)["cached_calls"]]
    fresh, logged = scored["groups"]["sag-6"]["deployment"], scored["groups"]["sag-6-no_judge"]["deployment"]
    assert fresh["cached_items"] == 0 and fresh["timed_items"] == fresh["items"]
    assert all(c > 0 for c in cached)  # every item of the second group reused calls of the first
    assert logged["cached_items"] == logged["timed_items"] == logged["items"] == len(wall)
    # the scripted calls take milliseconds; the logged ones are counted at the time they reported
    assert max(wall) < TURN_SECONDS <= logged["seconds_per_item"]
    # round 0 (one step) and round 1's debate (one step) came from the log: at least two steps each
    assert logged["seconds_per_item"] >= sum(wall) / len(wall) + 2 * TURN_SECONDS - 1e-9


def test_a_group_answering_one_letter_is_flagged_beside_its_cdr_cr_and_std(tmp_path: Path) -> None:
    spec = SuiteSpec("fairness,consistency", n_items=2, k_runs=2, k_cr=2)
    with SagStore(tmp_path / "e.duckdb") as store:
        _run(store, spec, "single", answer="C")
        data = build_export(store, spec.eval_id, command="test")
    check_export(data, "test")
    group = data["groups"]["single"]
    fair, cons = group["fairness"]["dominant"], group["consistency"]["medqa"]["dominant"]
    assert (fair["answer"], fair["share"], fair["flagged"]) == ("C", 1.0, True)  # fairness decodes greedily
    assert group["fairness"]["average"] == 0.0  # a constant answer never flips...
    # ...and agrees with itself (the shuffled-options runs map the letter C back to other options)
    assert cons["answer"] == "C" and cons["share"] > 0.5 and cons["flagged"]
    report = render_report(data)
    fairness_table = report.split("## Table 4")[1].split("## Safety")[0]
    consistency_table = report.split("## Tables 5 and 7")[1].split("## Table 6")[0]
    assert f"| single | 0.0 (0-66) of 2 | 0.0 (0-66) of 2 | 0.0 | C (100 %) | {DOMINANT_FLAG} |" in fairness_table
    assert f"| C ({100 * cons['share']:.0f} %) | {DOMINANT_FLAG} |" in consistency_table
    assert "One answer is more than half of a group's answers in fairness (single C 100 %)" in report
    frames = metric_frames(data)
    assert frames["fairness"].iloc[0][["most frequent answer (share)", "flag"]].tolist() == ["C (100 %)", DOMINANT_FLAG]
    assert frames["consistency"].iloc[0]["flag"] == DOMINANT_FLAG


def test_a_report_shows_only_its_suite_and_the_seeds_trained_rows_beside_a_trained_group(tmp_path: Path) -> None:
    spec = SuiteSpec("fairness,safety", n_items=2)
    with SagStore(tmp_path / "e.duckdb") as store:
        _run(store, spec, "single", answer="A")
        data = build_export(store, spec.eval_id, command="test")
    report = render_report(data)
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings == ["## Table 4: fairness, counterfactual divergence rate (%, lower is better)",
                        "## Safety (eq. 10; Fig. 4): MedSafetyBench harmful vs benign medical requests",
                        "## Reading"]  # deployment cost is measured on accuracy items
    assert "2 items per subset; groups: single." in report and "consistency on" not in report
    assert "seed: SAG w/ GRPO" not in report  # no group here is trained
    safety = report.split("## Safety")[1].split("## Reading")[0]  # answering A, it refuses nothing
    assert "no benchmark answered by both" not in report  # no accuracy in this suite
    assert f"| single | 0.0 (0-66) | 0.0 (0-66) | 0.0 | 0.50 | A (100 %) | {DOMINANT_FLAG} |" in safety
    assert "One answer is more than half of a group's answers in fairness (single A 100 %); safety (single A 100 %)" \
        in report
    assert metric_frames(data)["safety"].iloc[0][["most frequent answer (share)", "flag"]].tolist() == \
        ["A (100 %)", DOMINANT_FLAG]
    data["groups"]["single"]["config"]["backbones"] = ["smollm2-135m+lora:trained"] * 4
    trained = render_report(data).split("## Table 4")[1].split("## Safety")[0]
    assert "| seed: SAG w/ GRPO (qwen) | 1.1 | 1.0 | 1.1 |" in trained and "| seed: SAG w/ CTDE (qwen) |" in trained
    assert "PPO" not in trained
