"""Why a round ended in its action, in words with the numbers: one constructed case per
rule of the policy contract, then every terminal round of a stored run."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from studio.views.round_reason import fmt_pair, round_reason, row_reason
from studio.views.walkthrough import case_list, case_trace
from dcem.core.config import MediatorConfig
from dcem.store.database import Store

CFG = MediatorConfig(eps_safe=0.6, eps_low=4.0, m_safe=0.3, delta=0.05, window=2, t_max=6, s_asym=0.5)


def _reason(action: str, **kw: object) -> str:
    args: dict[str, object] = {"energy": 1.0, "margin": 0.1, "descent": None, "certified": False, "budget": False,
                               "number": 3, "cfg": CFG}
    args.update(kw)
    return round_reason(action, **args)  # type: ignore[arg-type]


def test_certified_decision_names_both_conditions() -> None:
    text = _reason("STOP_AND_DECIDE", energy=0.41, margin=0.52, certified=True)
    assert text == "energy 0.41 ≤ eps_safe 0.60 and margin 0.52 ≥ m_safe 0.30: certified decision"


def test_stalled_energy_escalates_with_the_descent() -> None:
    text = _reason("STOP_AND_ESCALATE", energy=4.1, descent=0.02)
    assert text == ("energy 4.10 > eps_low 4.00 and it fell by only 0.02 per round averaged over the window of "
                    "2 rounds (less than delta 0.05): escalate, the case goes to a human reviewer")
    assert "it rose by 0.10 per round" in _reason("STOP_AND_ESCALATE", energy=4.1, descent=-0.1)
    assert "it did not fall at all over the window of 2 rounds (less than delta 0.05)" in \
        _reason("STOP_AND_ESCALATE", energy=4.1, descent=0.0)


def test_budget_decision_says_why_it_is_not_certified() -> None:
    text = _reason("STOP_AND_DECIDE", energy=1.0, margin=0.1, budget=True, number=6)
    assert text == ("round 6 is the round budget t_max 6 and energy 1.00 ≤ eps_low 4.00: decision at the budget, "
                    "not certified (energy 1.00 > eps_safe 0.60 and margin 0.10 < m_safe 0.30)")
    only_margin = _reason("STOP_AND_DECIDE", energy=0.5, margin=0.1, budget=True, number=6)
    assert only_margin.endswith("not certified (margin 0.10 < m_safe 0.30)")


def test_budget_escalation_and_the_method_without_escalation() -> None:
    text = _reason("STOP_AND_ESCALATE", energy=4.5, budget=True, number=6)
    assert text == ("round 6 is the round budget t_max 6 and energy 4.50 > eps_low 4.00: escalate, the case goes "
                    "to a human reviewer")
    noesc = _reason("STOP_AND_DECIDE", energy=4.5, budget=True, number=6, escalation=False)
    assert "this method never escalates, so it decides although energy 4.50 > eps_low 4.00" in noesc
    assert noesc.endswith("decision at the budget, not certified (energy 4.50 > eps_safe 0.60 and margin 0.10 < "
                          "m_safe 0.30)")


def test_challenge_and_continue() -> None:
    steer = _reason("DIFFERENTIAL_STEER", energy=2.0, margin=0.4, gate=0.73)
    assert steer == ("not certified (energy 2.00 > eps_safe 0.60); the target agent's own risk 0.73 ≥ s_asym 0.50 "
                     "and this challenge was not sent before: challenge")
    assert _reason("CONTINUE", number=2) == ("not certified (energy 1.00 > eps_safe 0.60 and margin 0.10 < m_safe "
                                             "0.30), no challenge due, and no stall can be seen yet: the descent is "
                                             "defined from round W + 1 = 3 on: continue")
    assert "energy 1.00 ≤ eps_low 4.00, so a slow descent does not escalate" in _reason("CONTINUE", descent=0.0)
    moving = _reason("CONTINUE", energy=4.5, descent=0.3)
    assert "it fell by 0.30 per round averaged over the window of 2 rounds (at least delta 0.05), so it has not " \
           "stalled" in moving
    assert moving.endswith(": continue")


def test_close_numbers_get_enough_decimals() -> None:
    assert fmt_pair(0.6004, 0.6) == ("0.6004", "0.6000")
    assert _reason("CONTINUE", energy=0.6004, margin=0.5).startswith("not certified (energy 0.6004 > eps_safe 0.6000)")


def test_row_reason_reads_missing_values() -> None:
    row = pd.Series({"action": "DIFFERENTIAL_STEER", "energy": 2.0, "margin": 0.4, "descent": pd.NA,
                     "certified": False, "budget": False, "steer_agent": 1, "agent_risk": [0.2, 0.9]})
    assert "own risk 0.90 ≥ s_asym 0.50" in row_reason(row, 1, CFG)
    row["action"], row["steer_agent"] = "CONTINUE", pd.NA
    assert "the descent is defined from round W + 1 = 3 on" in row_reason(row, 1, CFG)


@pytest.mark.parametrize("method", ["dcem", "dcem_noesc"])
def test_every_stored_terminal_round_is_explained(run_db: Path, method: str) -> None:
    words = {"certified": "certified decision", "budget": "decision at the budget", "escalated": ": escalate"}
    seen = set()
    with Store(run_db) as store:
        for case_id in case_list(store, "ui-run", method)["case_id"]:
            trace = case_trace(store, "ui-run", case_id, method)
            row = trace.rounds[trace.rounds["round"] == trace.outcome_round].iloc[0]
            kind = ("escalated" if row["action"] == "STOP_AND_ESCALATE" else
                    "certified" if row["certified"] else "budget")
            text = row_reason(row, trace.outcome_round, trace.config, escalation=method == "dcem")
            assert words[kind] in text, (case_id, text)
            seen.add(kind)
    assert len(seen) >= 2  # the run ends cases in more than one way
