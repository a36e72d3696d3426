"""Why the mediator took a round's action, in plain words with the numbers.

The rules are those of the policy contract (:mod:`dcem.core.policy`), first match wins:

1. certified decision if energy <= eps_safe and margin >= m_safe;
2. a challenge (DIFFERENTIAL_STEER) when the target agent's gate value reaches s_asym;
3. escalate if the windowed descent is defined, below delta, and energy > eps_low;
4. continue;

and at round t_max an unfinished case is decided (not certified) when energy <= eps_low or
the method never escalates, else escalated.  :func:`round_reason` reads the stored action
and flags of a round and says which rule fired and why; it never re-decides.
"""
from __future__ import annotations

import math
from typing import Mapping

from dcem.core.config import MediatorConfig

__all__ = ["fmt_pair", "round_reason", "row_reason", "not_certified_because", "descent_words"]


def fmt_pair(a: float, b: float) -> tuple[str, str]:
    """Two numbers with the fewest decimals (2 to 6) that keep unequal numbers distinct."""
    sa, sb = f"{a:.2f}", f"{b:.2f}"
    for digits in range(2, 7):
        sa, sb = f"{a:.{digits}f}", f"{b:.{digits}f}"
        if sa != sb or a == b:
            break
    return sa, sb


def _cmp(name: str, value: float, limit_name: str, limit: float, *, at_most: bool) -> str:
    """'energy 0.41 ≤ eps_safe 0.60' or 'energy 0.72 > eps_safe 0.60' (which holds)."""
    v, lim = fmt_pair(value, limit)
    if at_most:
        sign = "≤" if value <= limit else ">"
    else:
        sign = "≥" if value >= limit else "<"
    return f"{name} {v} {sign} {limit_name} {lim}"


def not_certified_because(energy: float, margin: float, cfg: MediatorConfig) -> str:
    """The failed certification condition(s), e.g. 'energy 0.72 > eps_safe 0.60'."""
    failed = []
    if not energy <= cfg.eps_safe:
        failed.append(_cmp("energy", energy, "eps_safe", cfg.eps_safe, at_most=True))
    if not margin >= cfg.m_safe:
        failed.append(_cmp("margin", margin, "m_safe", cfg.m_safe, at_most=False))
    return " and ".join(failed) if failed else "certification not reached"


def _defined(descent: float | None) -> bool:
    return descent is not None and not (isinstance(descent, float) and math.isnan(descent))


def descent_words(descent: float, cfg: MediatorConfig) -> str:
    """How the energy moved over the window, e.g. 'it fell by only 0.02 per round'."""
    d, delta = fmt_pair(abs(descent), cfg.delta)
    if descent > 0:
        moved = f"it fell by only {d} per round" if descent < cfg.delta else f"it fell by {d} per round"
    elif descent < 0:
        moved = f"it rose by {d} per round"
    else:
        moved = "it did not fall at all"
    window = "the last round" if cfg.window == 1 else f"the window of {cfg.window} rounds"
    relation = "less than" if descent < cfg.delta else "at least"
    averaged = "over" if descent == 0 else "averaged over"
    return f"{moved} {averaged} {window} ({relation} delta {delta})"


def _budget_reason(action: str, energy: float, margin: float, number: int, cfg: MediatorConfig,
                   escalation: bool) -> str:
    head = f"round {number} is the round budget t_max {cfg.t_max}"
    low = _cmp("energy", energy, "eps_low", cfg.eps_low, at_most=True)
    if action == "STOP_AND_ESCALATE":
        return f"{head} and {low}: escalate, the case goes to a human reviewer"
    why_not = not_certified_because(energy, margin, cfg)
    if not escalation and energy > cfg.eps_low:
        return (f"{head}; this method never escalates, so it decides although {low}: "
                f"decision at the budget, not certified ({why_not})")
    return f"{head} and {low}: decision at the budget, not certified ({why_not})"


def _open_reason(energy: float, descent: float | None, cfg: MediatorConfig, escalation: bool) -> str:
    """Why a non-certified, unchallenged round did not escalate (so it continues)."""
    if not escalation:
        return "this method never escalates"
    if not _defined(descent):
        return f"no stall can be seen yet: the descent is defined from round W + 1 = {cfg.window + 1} on"
    if energy <= cfg.eps_low:
        return _cmp("energy", energy, "eps_low", cfg.eps_low, at_most=True) + ", so a slow descent does not escalate"
    return descent_words(float(descent), cfg) + ", so it has not stalled"  # type: ignore[arg-type]


def round_reason(action: str, *, energy: float, margin: float, descent: float | None, certified: bool,
                 budget: bool, number: int, cfg: MediatorConfig, escalation: bool = True,
                 gate: float | None = None) -> str:
    """One sentence saying why round ``number`` ended in ``action`` under ``cfg``.

    ``certified`` and ``budget`` are the stored flags of the round; ``escalation`` is False
    for a method without STOP_AND_ESCALATE; ``gate`` is the challenged agent's gate value
    (its own risk under the risk gate), when known.
    """
    if action == "STOP_AND_DECIDE" and certified:
        return (_cmp("energy", energy, "eps_safe", cfg.eps_safe, at_most=True) + " and "
                + _cmp("margin", margin, "m_safe", cfg.m_safe, at_most=False) + ": certified decision")
    if budget and action in ("STOP_AND_DECIDE", "STOP_AND_ESCALATE"):
        return _budget_reason(action, energy, margin, number, cfg, escalation)
    if action == "STOP_AND_ESCALATE":
        low = _cmp("energy", energy, "eps_low", cfg.eps_low, at_most=True)
        moved = descent_words(float(descent), cfg) if _defined(descent) else "its descent stalled"
        return f"{low} and {moved}: escalate, the case goes to a human reviewer"
    why_not = not_certified_because(energy, margin, cfg)
    if action == "DIFFERENTIAL_STEER":
        return f"not certified ({why_not}); {_gate_words(gate, cfg)} and this challenge was not sent before: challenge"
    if action == "CONTINUE":
        stall = _open_reason(energy, descent, cfg, escalation)
        return f"not certified ({why_not}), no challenge due, and {stall}: continue"
    return f"{action}: no mediator rule applies"


def _gate_words(gate: float | None, cfg: MediatorConfig) -> str:
    if gate is None:
        _, s = fmt_pair(cfg.s_asym, cfg.s_asym)
        what = "own risk" if cfg.steer_gate == "risk" else "reliability gap"
        return f"the target agent's {what} reached s_asym {s}"
    return "the target agent's " + _cmp("own risk", gate, "s_asym", cfg.s_asym, at_most=False)


def _number(value: object) -> float | None:
    """A stored number as a float; None for None, NaN or a missing value (pd.NA)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def row_reason(row: Mapping[str, object], number: int, cfg: MediatorConfig, *, escalation: bool = True) -> str:
    """:func:`round_reason` of a stored trace row (columns action, energy, margin, descent,
    certified, budget, steer_agent, agent_risk)."""
    target = _number(row.get("steer_agent"))
    risks = row.get("agent_risk")
    gate = None
    if cfg.steer_gate == "risk" and target is not None and target >= 0 and risks is not None:
        gate = _number(list(risks)[int(target)])  # type: ignore[call-overload]
    return round_reason(str(row["action"]), energy=float(row["energy"]), margin=float(row["margin"]),  # type: ignore[arg-type]
                        descent=_number(row.get("descent")), certified=bool(row.get("certified")),
                        budget=bool(row.get("budget")), number=number, cfg=cfg, escalation=escalation, gate=gate)
