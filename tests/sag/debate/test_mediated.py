"""D-CEM as the group's stopping rule, with scripted agents and a hand-made calibration."""
from __future__ import annotations

import numpy as np
import pytest

from clinical.questions import load_benchmark
from common.errors import ConfigError
from sag.group.config import preset
from sag.debate.answer import Calibration, answer_item, calibrate, check_fixed_options
from sag.debate.mediated import calibrate_panel, fit_mediator, mediator_config, reporters_of
from sag.group.transcript import ESCALATE

from ..fakes import ScriptedTurns, constant

ITEMS = load_benchmark("medqa")
CFG = preset("sag-6-dcem")


def _panel(accuracy: float = 0.7) -> Calibration:
    """A calibration of four reporters that answer right with probability ``accuracy``,
    each putting 0.7 on its answer."""
    reporters = reporters_of(CFG)
    truth = np.repeat(np.arange(4), 10)
    rng = np.random.default_rng(0)
    reports = np.where(rng.random((40, len(reporters))) < accuracy, truth[:, None], rng.integers(0, 4, (40, 4)))
    probs = np.full((40, 4, 4), 0.1)
    np.put_along_axis(probs, reports[..., None], 0.7, axis=-1)
    panel = calibrate_panel(truth, reports, ("A", "B", "C", "D"), CFG)
    fit = fit_mediator(panel, reports, probs, truth, CFG)
    assert fit.config.t_max == CFG.t_max
    return Calibration(panel, fit.config, tuple(f"c{i}" for i in range(40)), reporters, reports, fit.report)


def test_reporters_are_the_debaters() -> None:
    assert reporters_of(CFG) == ("R1", "R2", "K1", "K2")


def test_agreement_is_decided_by_the_mediator() -> None:
    runner = ScriptedTurns(constant("B"))
    result = answer_item(ITEMS[0], CFG, {m: runner for m in CFG.models()}, {}, calibration=_panel())
    assert result.mediator and result.mediator[-1].action == "STOP_AND_DECIDE"
    assert result.answer == "B" and result.outcome.stop_reason.startswith("D-CEM STOP_AND_DECIDE")
    assert result.outcome.rounds == result.mediator[-1].round == len(result.mediator)


def test_disagreement_keeps_the_group_talking() -> None:
    def split(agent: str, prompt: str, request) -> tuple[str, str]:
        return {"R1": "A", "R2": "C", "K1": "A", "K2": "C"}.get(agent, "A"), "I disagree."
    result = answer_item(ITEMS[0], CFG, {m: ScriptedTurns(split) for m in CFG.models()}, {},
                         calibration=_panel(0.9))
    actions = [r.action for r in result.mediator]
    assert actions[0] != "STOP_AND_DECIDE" and len(actions) > 1
    assert actions[-1] in ("STOP_AND_ESCALATE", "STOP_AND_DECIDE") and result.outcome.rounds == len(actions)


def test_a_challenge_reaches_the_named_agent_and_escalation_hands_over() -> None:
    fitted = _panel()
    strict = Calibration(fitted.panel, mediator_config(CFG), fitted.item_ids, fitted.reporters, fitted.reports)
    runner = ScriptedTurns(constant("B"))
    result = answer_item(ITEMS[0], CFG, {m: runner for m in CFG.models()}, {}, calibration=strict)
    steers = [r for r in result.mediator if r.action == "DIFFERENTIAL_STEER"]
    assert steers, [r.action for r in result.mediator]
    for steer in steers:  # the challenge goes with the next round, to the named agent only
        noted = [m for m in result.outcome.messages if m.round == steer.round + 1 and m.note]
        assert [m.agent_id for m in noted] == [steer.steer_agent]
        assert f"speaks for option {steer.steer_alternative}" in noted[0].note
    prompts = [r.messages[-1].content for r in runner.requests if "The mediator asks you" in r.messages[-1].content]
    assert prompts and all(f"you are {steers[0].steer_agent}," in p for p in prompts)
    assert result.mediator[-1].action == "STOP_AND_ESCALATE"
    assert result.answer == ESCALATE and result.escalated and not result.correct


def test_calibration_and_fixed_options() -> None:
    runner = ScriptedTurns(constant("A"))
    cal = calibrate(ITEMS[:8], CFG, {m: runner for m in CFG.models()}, {})
    assert cal.reports.shape == (8, 4) and (cal.reports == 0).all()
    assert cal.panel.confusion.shape == (4, 4, 4) and cal.model_calls == 8 * 6
    rows = cal.panel.confusion[0]
    assert np.allclose(rows.sum(axis=1), 1.0) and (rows[:, 0] > rows[:, 1]).all()  # always says A
    assert cal.to_dict()["reporters"] == ["R1", "R2", "K1", "K2"]
    pro = load_benchmark("mmlu-pro-health")
    with pytest.raises(ConfigError, match="same number of options"):
        check_fixed_options(pro[:50])
    assert cal.config.t_max == CFG.t_max and "mediator" in cal.to_dict()
    with pytest.raises(ConfigError, match="calibration"):
        answer_item(ITEMS[0], CFG, {m: runner for m in CFG.models()}, {})
