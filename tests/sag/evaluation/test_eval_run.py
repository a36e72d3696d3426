"""The suite end to end with scripted agents: runs, resumes, scores, exports and reports."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import pytest

from runtime.turns import TurnRequest
from sag.group.config import preset
from sag.evaluation.export import build_export, latest_eval_id, load_export, write_export
from sag.evaluation.runner import run_group_eval
from sag.evaluation.scores import score_evaluation
from sag.evaluation.suite import SuiteSpec, build_parts
from sag.evaluation.tables import render_report
from sag.evaluation.subsets import load_subsets
from studio.views.sag_eval_view import (accuracy_frame, consistency_points, metric_frames, robustness_points,
                                        roc_points, seed_report, size_backbone_points, summary_line)
from sag.store.eval_tables import eval_parts
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns

SPEC = SuiteSpec("core", n_items=2)


def policy(agent: str, prompt: str, request: TurnRequest) -> tuple[str, str]:
    """A on race-b vignette 0 (stated Black), B otherwise; declines every request that
    asks to 'Write' (as most MedSafetyBench requests do); the safety agents refuse them."""
    request_text = prompt.split("Request:", 1)[1][:200] if "Request:" in prompt else ""
    if "Request:" in prompt:
        harmful = "write" in request_text.lower() or "how" in request_text.lower()
        if agent.startswith("S") and "REFUSE" in request.options and harmful:
            return "REFUSE", "FLAG: harmful request"
        return ("B" if harmful else "A"), "A request. NEW: no"
    return ("A" if "Black" in prompt else "B"), "It fits the findings. NEW: no"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("eval") / "eval.duckdb"
    with SagStore(path) as store:
        for name in ("single", "vote-6"):
            cfg = preset(name)
            runner = ScriptedTurns(policy)
            summary = run_group_eval(store, SPEC, cfg, runners={m: runner for m in cfg.models()},
                                     measure_memory=False)
            assert summary.complete and summary.computed == summary.total
    return path


def test_a_finished_evaluation_reruns_with_zero_model_calls(evaluated: Path) -> None:
    with SagStore(evaluated) as store:
        cfg = preset("single")
        runner = ScriptedTurns(policy)
        summary = run_group_eval(store, SPEC, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False)
        assert summary.computed == 0 and summary.model_calls == 0 and runner.requests == []
        parts = eval_parts(store, SPEC.eval_id)
        assert (parts["answered"] == parts["items"]).all()
        assert len(parts[parts["group_name"] == "single"]) == len(parts) // 2


def test_an_interrupted_evaluation_resumes_where_it_stopped(tmp_path: Path) -> None:
    spec = SuiteSpec("accuracy", n_items=2)
    cfg = preset("single")
    with SagStore(tmp_path / "e.duckdb") as store:
        ticks = iter(range(100))
        first = ScriptedTurns(policy)
        stopped = run_group_eval(store, spec, cfg, runners={m: first for m in cfg.models()}, measure_memory=False,
                                 cancel=lambda: next(ticks) >= 5)
        assert not stopped.complete and 0 < stopped.computed < stopped.total
        second = ScriptedTurns(policy)
        rest = run_group_eval(store, spec, cfg, runners={m: second for m in cfg.models()}, measure_memory=False)
        assert rest.complete and stopped.computed + rest.computed == rest.total
        assert len(second.requests) == rest.total - stopped.computed


def test_scores_follow_the_scripted_answers(evaluated: Path) -> None:
    with SagStore(evaluated) as store:
        data = build_export(store, latest_eval_id(store), command="test")
    single = data["groups"]["single"]
    assert single["accuracy"]["medqa"]["n"] == 2
    # race: (White, Black) flips for vignette 0, (White, Hispanic) does not -> 1 of 2
    assert (single["fairness"]["race"]["k"], single["fairness"]["race"]["n"]) == (1, 2)
    assert single["fairness"]["gender"]["k"] == 0
    assert single["fairness"]["average"] == pytest.approx(0.25)
    for group in ("single", "vote-6"):
        safety = data["groups"][group]["safety"]
        assert safety["roc"]["fpr"][0] == 0.0 and safety["roc"]["tpr"][-1] == 1.0
    assert data["groups"]["vote-6"]["safety"]["hrr_refuse_only"]["n"] == 2
    consistency = single["consistency"]["medqa"]
    assert len(consistency["base"]["accuracies"]) == 5 and consistency["cr"]["k"] == 10
    # the scripted agent puts 0.7 on its letter; at temperature 0.7 the letter is drawn, so runs differ
    from sag.evaluation.metrics import run_std

    accs = consistency["base"]["accuracies"]
    assert consistency["base"]["std"] == pytest.approx(run_std(accs)) and len(set(accs)) > 1
    assert 0.5 <= consistency["cr"]["value"] < 1.0
    dep = data["groups"]["vote-6"]["deployment"]
    assert dep["tokens_per_item"] > data["groups"]["single"]["deployment"]["tokens_per_item"] > 0
    assert data["screen"]["roc"]["auc"] >= 0.5 and data["screen"]["train"] > 500
    items = data["answers"]["single"]["accuracy/medqa"]["items"]
    k = sum(1 for _, answer, truth in items if answer == truth)
    assert k == single["accuracy"]["medqa"]["k"]


def test_export_round_trip_gives_the_same_report(evaluated: Path, tmp_path: Path) -> None:
    with SagStore(evaluated) as store:
        data = build_export(store, SPEC.eval_id, command="python -m sag eval ...")
    write_export(data, tmp_path / "e.json")
    again = load_export(tmp_path / "e.json")
    assert render_report(again) == render_report(data)
    text = render_report(again)
    for heading in ("Table 2", "Table 3", "Relevance", "Table 4", "Safety", "Robustness", "Tables 5 and 7",
                    "Table 6", "Reading"):
        assert f"## {heading}" in text
    assert "| single |" in text and "| vote-6 |" in text and "seed: SAG Pre-trained" in text
    assert "vote-6 vs single" in text


def test_bad_export_files_are_refused(tmp_path: Path) -> None:
    from common.errors import InputError

    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load_export(bad)
    bad.write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(InputError, match="not a SAG evaluation export"):
        load_export(bad)
    with pytest.raises(InputError, match="cannot read"):
        load_export(tmp_path / "missing.json")


def test_nan_never_reaches_the_export(evaluated: Path) -> None:
    import json

    with SagStore(evaluated) as store:
        text = json.dumps(build_export(store, SPEC.eval_id), allow_nan=False)
    assert not math.isnan(len(text))


def test_a_group_stopped_between_two_parts_is_reported_unfinished(tmp_path: Path) -> None:
    """Parts are recorded as the group reaches them: stopped right after its first part,
    the group has begun one part only, every item of which is answered; the plan each
    part keeps says the group is far from done."""
    from sag.evaluation.scores import score_evaluation
    from sag.evaluation.tables import unfinished_note
    from studio.views.sag_eval_view import summary_line

    spec = SuiteSpec("accuracy", n_items=2)
    cfg = preset("single")
    with SagStore(tmp_path / "e.duckdb") as store:
        def first_part_done() -> bool:
            return store.con.cursor().execute("SELECT count(*) FROM sag_outcomes").fetchone()[0] >= 2

        runner = ScriptedTurns(policy)
        stopped = run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False,
                                 cancel=first_part_done)
        assert not stopped.complete
        parts = eval_parts(store, spec.eval_id)
        assert len(parts) == 1 and (parts["answered"] == parts["items"]).all()
        scored = score_evaluation(store, spec.eval_id)
        single = scored["groups"]["single"]
        assert (single["complete"], single["items_answered"], single["items_planned"]) == (False, 2, 12)
        note = "Not finished yet (numbers cover the items answered so far): single (2 of 12 items)."
        assert unfinished_note(scored) == note and note in summary_line(scored) and note in render_report(scored)
        rest = run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False)
        scored = score_evaluation(store, spec.eval_id)
        assert rest.complete and scored["groups"]["single"]["complete"] and unfinished_note(scored) == ""
        assert scored["groups"]["single"]["items_answered"] == scored["groups"]["single"]["items_planned"] == 12


def test_the_plan_of_a_mediated_group_leaves_out_the_parts_it_cannot_answer(tmp_path: Path) -> None:
    """D-CEM needs one label set, so the MMLU-Pro parts (3 to 10 options) are skipped and
    are not owed: the group is complete without them."""
    from sag.evaluation.scores import score_evaluation

    spec = SuiteSpec("accuracy", n_items=1)
    cfg = preset("sag-6-dcem").with_changes(n_cal=4)
    with SagStore(tmp_path / "e.duckdb") as store:
        runner = ScriptedTurns(policy)
        summary = run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False)
        group = score_evaluation(store, spec.eval_id)["groups"][cfg.name]
    assert summary.complete and set(summary.skipped_parts) == {"accuracy/mmlu-pro-health", "accuracy/mmlu-pro-biology"}
    assert group["complete"] and group["items_answered"] == group["items_planned"] == 4
    assert set(group["accuracy"]) == {"medqa", "medmcqa", "mmlu-medical", "agentclinic"}


def test_a_group_stopped_between_the_two_perturbed_parts_scores_and_reports(tmp_path: Path) -> None:
    """The distractor part not begun yet: the robustness row has clean and noisy accuracy
    and no distractor column; nothing fails."""
    spec = SuiteSpec("core", n_items=2)
    cfg = preset("single")
    with SagStore(tmp_path / "e.duckdb") as store:
        runner = ScriptedTurns(policy)
        summary = run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False,
                                 only=("accuracy/medqa", "robustness/medqa/ling"))
        assert summary.complete and summary.parts == 2 and summary.total == 4
        scored = score_evaluation(store, spec.eval_id)
    row = scored["groups"]["single"]["robustness"]["medqa"]
    assert set(row) == {"clean", "ling"} and row["ling"]["n"] == 2
    assert set(robustness_points(scored)["condition"]) == {"clean", "linguistic noise"}
    report = render_report(scored)
    line = next(ln for ln in report.splitlines() if ln.startswith("| single | medqa |"))
    assert line.split("|")[5].strip() == "-"  # the distractor column
    assert "Not finished yet" in report


def _stop_after(checks: int) -> Callable[[], bool]:
    """A cancel callback that lets ``checks`` checks pass, then stops the run."""
    seen = iter(range(checks))
    return lambda: next(seen, None) is None


def _check_readable(store: SagStore, eval_id: str) -> dict[str, Any]:
    scored = score_evaluation(store, eval_id)
    assert seed_report(scored).startswith("# ") and summary_line(scored)
    frames = metric_frames(scored)
    assert set(frames) >= {"relevance", "fairness", "safety", "robustness", "consistency", "deployment"}
    for draw in (accuracy_frame, robustness_points, consistency_points, roc_points, size_backbone_points):
        draw(scored)
    return scored


def test_an_evaluation_stopped_anywhere_scores_reports_and_draws(tmp_path: Path) -> None:
    """A page opened while an evaluation runs reads the store at any point: every part in
    turn begun with none of its items answered (the parts before it done), and a part of
    two items with one answered.  Scoring, the report, the export and every table and
    chart frame must work."""
    spec = SuiteSpec("core", n_items=1, consistency_items=2)
    cfg = preset("single")
    parts = build_parts(spec, load_subsets())
    runner = ScriptedTurns(policy)
    with SagStore(tmp_path / "e.duckdb") as store:
        for part in parts:
            for checks in (1, 2)[:len(part.items)]:  # begun; one item answered (parts of two items)
                run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False,
                               only=(part.key,), cancel=_stop_after(checks))
                assert not _check_readable(store, spec.eval_id)["groups"]["single"]["complete"]
            run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False,
                           only=(part.key,))
        assert _check_readable(store, spec.eval_id)["groups"]["single"]["complete"]
        assert build_export(store, spec.eval_id)["groups"]["single"]["complete"]


def test_the_dcem_group_calibrates_once_per_benchmark_with_its_own_decoding(tmp_path: Path) -> None:
    """The consistency runs sample the debate (temperature 0.7-1.0, seeds); the mediator's
    calibration is the accuracy part's, played greedily once and then read from the call log."""
    from sag.evaluation.runner import calibration_items, part_config, part_run_id

    spec = SuiteSpec("accuracy,consistency", n_items=1, consistency_items=1, k_runs=1, k_cr=1)
    cfg = preset("sag-6-dcem").with_changes(n_cal=4)
    subsets = load_subsets()
    stems = [it.question[:60] for it in calibration_items("medqa", subsets, cfg.n_cal)]
    with SagStore(tmp_path / "e.duckdb") as store:
        runner = ScriptedTurns(policy)
        run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False,
                       only=("accuracy/medqa",))
        greedy = len(runner.requests)
        summary = run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False,
                                 only=("consistency",))
        parts = {p.key: p for p in build_parts(spec, subsets)}
        calibrations = {key: store.calibration(part_run_id(part_config(cfg, p), p)) for key, p in parts.items()
                        if key == "accuracy/medqa" or key.startswith("consistency/")}
    assert summary.complete and summary.parts == 4 and greedy > 0
    sampled = runner.requests[greedy:]
    assert sampled and all(r.temperature > 0 for r in sampled)  # the debates were sampled ...
    assert not [r for r in sampled if any(s in m.content for m in r.messages for s in stems)]  # ... not the calibration
    assert len(calibrations) == 5 and all(c is not None for c in calibrations.values())
    assert all(c == calibrations["accuracy/medqa"] for c in calibrations.values())
