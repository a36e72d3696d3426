"""Why a re-scored run escalates every case, in one sentence with the numbers.

An escalation always happens above eps_low (:mod:`dcem.core.policy`: a stalled descent
above eps_low, or the round budget reached above it), so when settings turn every case
into an escalation the sentence names eps_low, how far above it the closest case ended,
and how far the lowest energy any case reached stays from eps_safe.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["all_escalated_reason"]


def _threshold(values: pd.Series) -> str:
    low, high = float(values.min()), float(values.max())
    return f"{low:.3g}" if low == high else f"{low:.3g} to {high:.3g} by cell"


def all_escalated_reason(outcomes: pd.DataFrame) -> str:
    """The sentence for :class:`dcem.analysis.whatif.WhatIfResult` ``outcomes`` in which
    every case is escalated; empty otherwise."""
    if outcomes.empty or not (outcomes["action"] == "STOP_AND_ESCALATE").all():
        return ""
    over_low = outcomes["energy"] - outcomes["eps_low"]
    closest = outcomes.loc[over_low.idxmin()]
    to_safe = outcomes["lowest_energy"] - outcomes["eps_safe"]
    nearest = outcomes.loc[to_safe.idxmin()]
    text = (f"Every case is escalated because every case ends above eps_low ({_threshold(outcomes['eps_low'])}): "
            f"the closest ends at energy {closest['energy']:.3g}, {float(over_low.min()):.3g} above its cell's "
            f"eps_low {closest['eps_low']:.3g}")
    if float(to_safe.min()) > 0:
        text += (f", and no case ever comes down to eps_safe ({_threshold(outcomes['eps_safe'])}): the lowest "
                 f"energy any case reaches is {nearest['lowest_energy']:.3g}, {float(to_safe.min()):.3g} above "
                 f"its cell's eps_safe")
    return text + "."
