"""Differential steering at the rule level (Appendix B.3, eq. 15-18) and compliance
(Appendix B.4 eq. 19, Appendix F eq. 21).

An agent's justification signal is its rule-weight vector ``w`` of shape (R,) over a
shared rule space.  The mediator recommends a conservative revision ``w_rec`` of the
target agent's weights toward a reference explanation and names the top-k rules whose
weights it would move most (``S(t)``).  Whether the agent adopts the recommendation is
its own business: the compliance models below only serve the simulations.

Every function is batched over M steered cases: weights have shape (M, R).

Choices made here (the specification leaves them open):

* the reference ``w_ref`` is supplied by the caller; the rule agents use the weights of
  the other agent with the lowest current agent risk (the "stronger agent's evidence");
* only coordinates whose rule concludes the current label ŷ or the alternative z move
  (an ``update_mask``); the rules of other labels say nothing about the ŷ-vs-z question;
* the feasible set ``W`` of eq. (16) is the box ``[w_lo, w_hi]`` per coordinate, and
  ``Π_W`` is clipping to it;
* eq. (17) is one projected gradient step; ``n_steps > 1`` iterates it with the anchor
  kept at the agent's current weights (only then does ``lambda_st`` matter, since the
  gradient of the quadratic term vanishes at the anchor).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from common.errors import ConfigError
from common.fields import Flag, Number, OneOf, Spec, ToFloat, Whole

__all__ = [
    "SteeringConfig", "softmax", "explanation_discrepancy", "discrepancy_gradient",
    "steering_objective", "update_mask", "recommend", "distinguishing_rules",
    "comply", "blend_compliance", "REFERENCES", "contrastive_template",
]

# Weight changes smaller than this are not reported in S(t).
_TINY = 1e-9

REFERENCES = ("peer", "template")


@dataclass(frozen=True)
class SteeringConfig:
    """Parameters of the recommended-explanation step (eq. 16-18).

    Attributes
    ----------
    eta : float, default 8.0
        Step size of eq. (17).  The softmax over ~10 rule weights has small entries
        (~0.1), so the gradient of D_exp is small; a large step lets a single challenge
        move a weight by about one unit.
    gamma_st : float, default 1.0
        Weight of the explanation discrepancy D_exp in eq. (16).
    lambda_st : float, default 1.0
        Weight of the proximity term; only matters when ``n_steps > 1``.
    n_steps : int, default 1
        Projected gradient steps (the paper uses one).
    top_k : int, default 3
        Size of the distinguishing rule set S(t) (eq. 18).
    w_lo, w_hi : float, default 0.0 and 3.0
        The box ``W`` that ``Π_W`` clips to.  The lower bound 0 keeps rule weights
        non-negative: a revision can weaken a rule the agent holds, never turn it into
        evidence against its own conclusion.
    held_only : bool, default True
        Only the rules an agent held at the start may move (App. B.3 and G: the agent
        re-weighs its own rules and never creates one).  False also lets it give weight
        to a rule of the shared space it ignored so far (the peer's rule), a variant.
    reference : str, default "peer"
        ``"peer"``: w_ref is the weight vector of the other agent with the lowest
        current risk (the stronger agent's evidence).  ``"template"``: w_ref is a
        class-contrastive template estimated from labelled calibration data
        (:func:`contrastive_template`), the alternative Appendix B.3 mentions.
    """

    eta: float = 8.0
    gamma_st: float = 1.0
    lambda_st: float = 1.0
    n_steps: int = 1
    top_k: int = 3
    w_lo: float = 0.0
    w_hi: float = 3.0
    held_only: bool = True
    reference: str = "peer"

    def __post_init__(self) -> None:
        _WEIGHTS.apply(self)
        if self.w_lo >= self.w_hi:
            raise ConfigError("w_lo", f"must be below w_hi ({self.w_lo} >= {self.w_hi})")
        _SETTINGS.apply(self)


_FINITE = (Number(finite=True), ToFloat())
_NON_NEGATIVE = (*_FINITE, Number(0, msg="must be >= 0, got {value}"))
_WEIGHTS = Spec({"eta": _NON_NEGATIVE, "gamma_st": _NON_NEGATIVE, "lambda_st": _NON_NEGATIVE,
                 "w_lo": _FINITE, "w_hi": _FINITE})
_STEP_COUNT = Whole(1, msg="must be an integer >= 1, got {value!r}")
_SETTINGS = Spec({"n_steps": _STEP_COUNT, "top_k": _STEP_COUNT, "held_only": Flag(),
                  "reference": OneOf(REFERENCES, msg="must be one of {options}, got {value!r}")})


def softmax(w: np.ndarray) -> np.ndarray:
    """``σ(w)`` along the last axis, with a max shift against overflow."""
    z = np.asarray(w, dtype=float)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _log_softmax(w: np.ndarray) -> np.ndarray:
    z = np.asarray(w, dtype=float)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def explanation_discrepancy(w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """``D_exp(w1, w2) = KL(σ(w1)||σ(w2)) + KL(σ(w2)||σ(w1))`` (eq. 15).

    w1, w2 : (..., R).  Returns (...).  Uses ``sum (p - q)(log p - log q)``.
    """
    lp, lq = _log_softmax(w1), _log_softmax(w2)
    return np.sum((np.exp(lp) - np.exp(lq)) * (lp - lq), axis=-1)


def discrepancy_gradient(w: np.ndarray, w_ref: np.ndarray) -> np.ndarray:
    """Gradient of ``D_exp(w, w_ref)`` with respect to ``w``; shape (..., R).

    With ``p = σ(w)``, ``q = σ(w_ref)`` and ``u = log p - log q``:
    ``∇ KL(p||q) = p (u - <p, u>)`` and ``∇ KL(q||p) = p - q``.
    """
    lp, lq = _log_softmax(w), _log_softmax(w_ref)
    p, q = np.exp(lp), np.exp(lq)
    u = lp - lq
    return p * (u - np.sum(p * u, axis=-1, keepdims=True)) + (p - q)


def steering_objective(w: np.ndarray, anchor: np.ndarray, w_ref: np.ndarray,
                       cfg: SteeringConfig) -> np.ndarray:
    """The objective of eq. (16): ``λ/2 ||w - anchor||² + γ D_exp(w, w_ref)``; (...)."""
    diff = np.asarray(w, dtype=float) - anchor
    return 0.5 * cfg.lambda_st * np.sum(diff * diff, axis=-1) + cfg.gamma_st * explanation_discrepancy(w, w_ref)


def update_mask(consequent: np.ndarray, current: np.ndarray, alternative: np.ndarray,
                held: np.ndarray | None = None) -> np.ndarray:
    """Coordinates that may move: rules concluding ŷ or z (and held, if given).

    consequent : int (R,); current, alternative : int (M,); held : bool (M, R) or None.
    Returns bool (M, R).
    """
    cons = np.asarray(consequent)[None, :]
    mask = (cons == np.asarray(current)[:, None]) | (cons == np.asarray(alternative)[:, None])
    if held is not None:
        mask &= np.asarray(held, dtype=bool)
    return mask


def recommend(w: np.ndarray, w_ref: np.ndarray, mask: np.ndarray, cfg: SteeringConfig) -> np.ndarray:
    """Recommended weights ``w_rec`` by projected gradient steps on eq. (16) (eq. 17).

    ``w_rec = Π_W(w - η ∇[λ/2 ||v - w||² + γ D_exp(v, w_ref)]_{v=w})``, restricted to the
    masked coordinates (the others keep their value) and repeated ``cfg.n_steps`` times
    with the anchor fixed at ``w``.

    w, w_ref : (M, R); mask : bool (M, R).  Returns (M, R).
    """
    anchor = np.asarray(w, dtype=float)
    ref = np.asarray(w_ref, dtype=float)
    m = np.asarray(mask, dtype=bool)
    cur = anchor.copy()
    for _ in range(cfg.n_steps):
        grad = cfg.lambda_st * (cur - anchor) + cfg.gamma_st * discrepancy_gradient(cur, ref)
        step = np.clip(cur - cfg.eta * grad, cfg.w_lo, cfg.w_hi)
        cur = np.where(m, step, cur)
    return cur


def distinguishing_rules(w_rec: np.ndarray, w: np.ndarray, names: Sequence[str],
                         k: int) -> list[tuple[str, ...]]:
    """``S(t) = TopK(|w_rec - w|, k)`` as rule names, largest change first (eq. 18).

    Coordinates that did not change are left out, so S(t) may have fewer than k names;
    ties go to the lower rule index.  w_rec, w : (M, R).  Returns M tuples.
    """
    change = np.abs(np.asarray(w_rec, dtype=float) - np.asarray(w, dtype=float))
    order = np.argsort(-change, axis=-1, kind="stable")[:, :k]
    out: list[tuple[str, ...]] = []
    for row, idx in zip(change, order):
        out.append(tuple(names[int(r)] for r in idx if row[r] > _TINY))
    return out


def comply(w: np.ndarray, w_rec: np.ndarray, xi: float, rng: np.random.Generator,
           cfg: SteeringConfig) -> tuple[np.ndarray, np.ndarray]:
    """All-or-nothing adoption (eq. 21): each row adopts ``w_rec`` with probability xi.

    One uniform draw per row from ``rng``; the result is projected onto the box.
    xi = 0 never adopts and xi = 1 always does (the draw is still taken, so the rng
    stream does not depend on xi).  Returns (new weights (M, R), adopted bool (M,)).
    """
    if not 0.0 <= xi <= 1.0:
        raise ConfigError("xi", f"compliance must lie in [0, 1], got {xi}")
    w = np.asarray(w, dtype=float)
    u = rng.random(w.shape[0])
    adopted = u < xi
    new = np.where(adopted[:, None], np.clip(w_rec, cfg.w_lo, cfg.w_hi), w)
    return new, adopted


def blend_compliance(w: np.ndarray, w_rec: np.ndarray, xi: float, cfg: SteeringConfig) -> np.ndarray:
    """Partial adoption (eq. 19): ``Π_W((1 - xi) w + xi w_rec)``; deterministic, (M, R)."""
    if not 0.0 <= xi <= 1.0:
        raise ConfigError("xi", f"compliance must lie in [0, 1], got {xi}")
    return np.clip((1.0 - xi) * np.asarray(w, dtype=float) + xi * np.asarray(w_rec, dtype=float),
                   cfg.w_lo, cfg.w_hi)


def contrastive_template(phi: np.ndarray, truth: np.ndarray, consequent: np.ndarray, n_labels: int,
                         cfg: SteeringConfig, *, alpha: float = 0.5) -> np.ndarray:
    """Class-contrastive reference weights estimated from labelled calibration cases.

    For rule r let ``f_r`` be the smoothed share of calibration cases on which r fires
    whose truth is r's consequent, ``f_r = (n_correct + alpha) / (n_fired + 2 alpha)``.
    The template weight is the score that makes a lone firing rule yield exactly that
    probability under a K-way softmax with the other classes at 0:
    ``w_r = log(f_r (K - 1) / (1 - f_r))``, clipped to the box.  A rule that never fires
    gets 0.

    phi : bool (n, R); truth : int (n,); consequent : int (R,).  Returns (R,).
    """
    p = np.asarray(phi, dtype=bool)
    y = np.asarray(truth, dtype=np.intp)
    cons = np.asarray(consequent, dtype=np.intp)
    fired = p.sum(axis=0).astype(float)
    correct = (p & (y[:, None] == cons[None, :])).sum(axis=0).astype(float)
    f = (correct + alpha) / (fired + 2.0 * alpha)
    w = np.log(f * (n_labels - 1) / (1.0 - f))
    return np.where(fired > 0, np.clip(w, cfg.w_lo, cfg.w_hi), 0.0)
