"""The mediator configuration: one frozen, validated dataclass.

Every policy parameter of D-CEM (sections 3.1-3.2 and Appendix B.4 of the specification)
lives here with a documented default.  Invalid values raise :class:`ConfigError` naming
the field.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

from dcem.core.vocabulary import PRIOR_MODES, STEER_GATES
from common.errors import ConfigError
from common.fields import Flag, Number, OneOf, Spec, ToFloat, Whole

__all__ = ["MediatorConfig", "PRIOR_MODES", "STEER_GATES", "MAX_WEIGHT", "MAX_ROUNDS"]

MAX_WEIGHT = 1e6  # alpha, beta, gamma, lambda_pool: larger weights overflow the energy
MAX_ROUNDS = 100_000  # window and t_max

_REAL = (Number(msg="must be a number, got {short}"), ToFloat(msg="is too large (beyond a float)"),
         Number(finite=True, msg="must be finite, got {value!r}"))
_WEIGHT = (*_REAL, Number(high=MAX_WEIGHT, msg="must be at most {high:g}, got {value:g}"),
           Number(0, msg="must be >= 0, got {value}"))
_NON_NEGATIVE = (*_REAL, Number(0, msg="must be >= 0, got {value}"))
_ROUNDS = Whole(1, MAX_ROUNDS, msg="must be an integer from 1 to {high}, got {short}")
_FIELDS = Spec({
    "alpha": _WEIGHT, "beta": _WEIGHT, "gamma": _WEIGHT, "lambda_pool": _WEIGHT,
    "rho_min": (*_REAL, Number(0, 1, closed="neither", msg="must lie in (0, 1), got {value}")),
    "omega_min": (*_REAL, Number(0, 0.5, msg="must lie in [0, 0.5], got {value}")),
    "eps_safe": _NON_NEGATIVE, "eps_low": _NON_NEGATIVE, "m_safe": _NON_NEGATIVE, "delta": _REAL,
    "s_asym": _NON_NEGATIVE, "window": _ROUNDS, "t_max": _ROUNDS,
    "prior": OneOf(PRIOR_MODES, msg="must be one of {options}, got {short}"),
    "steer_gate": OneOf(STEER_GATES, msg="must be one of {options}, got {short}"),
    "escalation": Flag(msg="must be true or false, got {short}"),
})


@dataclass(frozen=True)
class MediatorConfig:
    """Parameters of the D-CEM mediator.

    Attributes
    ----------
    alpha : float, default 1.0
        Weight of the posterior-disagreement term of the energy (eq. 10 / 20).
    beta : float, default 1.0
        Weight of the agents' expected-risk term of the energy.
    gamma : float, default 1.0
        Weight of the margin term ``gamma * exp(-margin)``.
    lambda_pool : float, default 1.0
        Exponent on the clipped reliabilities in the pooling weights (eq. 6).
    rho_min : float, default 0.05
        Floor on each reliability before pooling (eq. 5, Assumption B.4); in (0, 1).
    omega_min : float, default 0.05
        Clip each pooling weight to ``[omega_min, 1 - omega_min]`` then renormalise;
        0 disables clipping.  In [0, 0.5].
    eps_safe : float, default 0.6
        Energy at or below which a decision may be certified (STOP_AND_DECIDE).
    eps_low : float, default 1.2
        Energy above which stagnation escalates; must exceed ``eps_safe``.
    m_safe : float, default 0.3
        Minimum risk margin between the best and runner-up decisions to certify.
    delta : float, default 0.05
        Per-round deliberation cost: escalate when the windowed descent is below it.
    window : int, default 2
        Window W of the energy descent (eq. 11); the descent exists for rounds t > W.
    s_asym : float, default 0.5
        Steering gate: agent risk (``steer_gate="risk"``) or reliability gap
        (``steer_gate="reliability_gap"``) at or above which a challenge is issued.
    t_max : int, default 12
        Round budget; round ``t_max`` always ends the episode.
    prior : str, default "uniform"
        ``"uniform"`` or ``"empirical"`` (calibration base rates).
    steer_gate : str, default "risk"
        ``"risk"`` targets the agent with the largest own risk; ``"reliability_gap"``
        targets the least reliable agent when the reliability spread is large enough.
    escalation : bool, default True
        ``False`` removes STOP_AND_ESCALATE (the escalation ablation): stagnation
        continues and the budget always decides.

    The weights alpha, beta, gamma and lambda_pool are at most ``MAX_WEIGHT`` (1e6) so
    that the energy stays finite; window and t_max are at most ``MAX_ROUNDS`` (100,000).
    """

    alpha: float = 1.0
    beta: float = 1.0
    gamma: float = 1.0
    lambda_pool: float = 1.0
    rho_min: float = 0.05
    omega_min: float = 0.05
    eps_safe: float = 0.6
    eps_low: float = 1.2
    m_safe: float = 0.3
    delta: float = 0.05
    window: int = 2
    s_asym: float = 0.5
    t_max: int = 12
    prior: str = "uniform"
    steer_gate: str = "risk"
    escalation: bool = True

    def __post_init__(self) -> None:
        _FIELDS.apply(self)
        if self.eps_safe >= self.eps_low:
            raise ConfigError(
                "eps_safe",
                f"must be smaller than eps_low ({self.eps_safe} >= {self.eps_low})",
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary of every field."""
        return asdict(self)

    def with_changes(self, **changes: Any) -> "MediatorConfig":
        """A validated copy with some fields replaced."""
        return replace(self, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "MediatorConfig":
        """Build from a mapping; missing keys take defaults, unknown keys are refused.

        Integers given as floats with no fractional part (``6.0``) are accepted for the
        integer fields, since JSON editors often write them that way.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(key) for key in values if key not in known)
        if unknown:
            raise ConfigError(unknown[0], f"unknown parameter (known: {', '.join(sorted(known))})")
        cleaned = dict(values)
        for name in ("window", "t_max"):
            value = cleaned.get(name)
            if isinstance(value, float) and value.is_integer():
                cleaned[name] = int(value)
        return cls(**cleaned)
