"""The what-if page's one sentence on why every case is escalated, with its numbers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from studio.views.escalation_reason import all_escalated_reason
from dcem.analysis.whatif import load_run_replay, rescore
from dcem.store.database import Store


def test_the_sentence_names_eps_low_and_eps_safe_with_the_gaps() -> None:
    outcomes = pd.DataFrame({"action": ["STOP_AND_ESCALATE"] * 3, "energy": [9.0, 8.0, 12.0],
                             "lowest_energy": [8.5, 7.5, 6.0], "eps_safe": [5.0, 5.0, 5.5],
                             "eps_low": [6.0, 7.0, 6.0]})
    text = all_escalated_reason(outcomes)
    assert text.startswith("Every case is escalated because every case ends above eps_low (6 to 7 by cell)")
    assert "the closest ends at energy 8, 1 above its cell's eps_low 7" in text
    assert "lowest energy any case reaches is 6, 0.5 above its cell's eps_safe" in text
    decided = outcomes.assign(action=["STOP_AND_ESCALATE", "STOP_AND_DECIDE", "STOP_AND_ESCALATE"])
    assert all_escalated_reason(decided) == ""
    reached = outcomes.assign(lowest_energy=[4.0, 7.5, 6.0])  # one case once came under eps_safe
    assert "eps_safe" not in all_escalated_reason(reached)


def test_a_run_pushed_to_escalate_everything_is_explained_from_its_energies(run_db: Path) -> None:
    with Store(run_db) as store:
        replay = load_run_replay(store, "ui-run", "dcem")
    result = rescore(replay, changes={"eps_safe": 0.001, "eps_low": 0.002, "delta": 1.5})
    assert (result.outcomes["action"] == "STOP_AND_ESCALATE").all()
    text = all_escalated_reason(result.outcomes)
    low = float(result.outcomes["energy"].min())
    assert f"the closest ends at energy {low:.3g}, {low - 0.002:.3g} above" in text
    assert np.all(result.outcomes["lowest_energy"] <= result.outcomes["energy"])
    assert all_escalated_reason(rescore(replay, changes={}).outcomes) == ""
