"""How a statistical panel member takes a role, hears its peers and answers a challenge.

The member's own evidence is its classifier's probability vector for the case
(:mod:`dcem_clinical.stat_agent`), calibrated first: naive Bayes in particular is far too
sure of itself (0.98 on cases it gets wrong), and a role or a peer could then never move
it.  :func:`fit_temperature` chooses the temperature T that minimises the negative
log-likelihood of the member's out-of-fold CAL vectors (temperature scaling, Guo et al.
2017, which the seed cites for calibration), and ``p`` is the vector raised to 1/T and
renormalised (``calibrate`` False skips it).  It answers from scores on the log scale, as the rule
agents of the synthetic world do (:mod:`dcem.synthetic.rule_agents`)::

    s = lean(log p) + adjust + kappa / (A - 1) * (number of peers who reported each label
                                                  last round)
    answer vector = softmax(s)

- **Role** (:func:`leaned_scores`, from :func:`dcem_clinical.roles.scenario_leanings`):
  an *anchored* member (S2's agent B, both agents of S3b) adds ``anchor`` to the score of
  each anchor label (DDXPlus-8: URTI and GERD; MedQA-Tri: Gastroenterology): with the
  default 3.0 an anchor label needs its odds against the member's top answer to be below
  e^-3 = 1 : 20 to lose.  A member *sharp on some areas* (S3a) keeps its
  discrimination inside them and only ``residual`` of it outside: there its probability
  of each label is ``(1 - residual) * (mean over the labels outside) + residual * p``, so
  it knows a case is outside its areas but can barely tell those labels apart.
- **Peers** (every round from the second, for D-CEM's CONTINUE and for free discussion
  alike, as in the synthetic world): each peer's previous answer adds ``kappa / (A - 1)``
  to that label's score; default ``kappa`` 1.0, one peer weighing about as much as a
  factor e in the member's own odds.
- **Challenge** (DIFFERENTIAL_STEER on (current y, alternative z), Appendix B.3-B.4):
  the member compares its contrast ``s[z] - s[y]`` with a reference contrast, the
  answer vector of the peer with the lowest current agent risk (the "stronger agent's
  evidence" of B.3, as the rule agents choose it), and adopts ``compliance`` (xi of eq.
  19, default 1.0) of the difference, half on each of the two labels (``adjust``, kept
  for the rest of the case).  A member whose stronger peer favours z moves to z; one
  whose peer favours y more than itself grows surer of y; an S3b member whose peers share
  its anchor is not corrected, as the seed intends.  It lists as cues the ``cues``
  features of its own document that most favour z over y in its model.

Every setting is recorded with the run (:meth:`StatDialogue.to_dict`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from common.errors import ConfigError
from common.fields import Flag, Number, Spec, Whole
from dcem_clinical.roles import ANCHOR, AREAS, Leaning

__all__ = ["StatDialogue", "leaned_scores", "answer_vector", "challenge_shift", "log_vector", "fit_temperature",
           "tempered", "TEMPERATURES"]

_FLOOR = 1e-12
TEMPERATURES = np.geomspace(0.25, 64.0, 161)  # the grid fit_temperature searches


_STRENGTH = Number(0.0, 20.0, finite=True, msg="must be a number in [0, 20], got {value!r}")
_SETTINGS = Spec({"anchor": _STRENGTH, "kappa": _STRENGTH, "compliance": Number(0.0, 1.0), "residual": Number(0.0, 1.0),
                  "cues": Whole(0, 20, msg="must be a whole number in 0..20, got {value!r}"), "calibrate": Flag()})


@dataclass(frozen=True)
class StatDialogue:
    """The settings of :mod:`dcem_clinical.stat_dialogue` (module docstring)."""

    anchor: float = 3.0
    kappa: float = 1.0
    compliance: float = 1.0
    residual: float = 0.25
    cues: int = 3
    calibrate: bool = True

    def __post_init__(self) -> None:
        _SETTINGS.apply(self)

    def to_dict(self) -> dict[str, float | int | bool]:
        return asdict(self)


def log_vector(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """log of a probability vector, floored so that no entry is minus infinity."""
    return np.log(np.clip(np.asarray(p, dtype=float), _FLOOR, None))


def leaned_scores(p: np.ndarray, leaning: Leaning, cfg: StatDialogue) -> np.ndarray:
    """The member's scores for its own evidence ``p`` (K,) under its role."""
    p = np.asarray(p, dtype=float)
    if leaning.kind == AREAS and leaning.labels:
        outside = np.ones(len(p), dtype=bool)
        outside[list(leaning.labels)] = False
        if outside.any():
            p = p.copy()
            p[outside] = (1.0 - cfg.residual) * p[outside].mean() + cfg.residual * p[outside]
    scores = log_vector(p)
    if leaning.kind == ANCHOR:
        scores[list(leaning.labels)] += cfg.anchor
    return scores


def answer_vector(scores: np.ndarray, adjust: np.ndarray, peer_labels: Sequence[int], n_agents: int,
                  cfg: StatDialogue) -> np.ndarray:
    """softmax(scores + adjust + kappa / (A - 1) per peer answer): the member's vector (K,)."""
    total = np.asarray(scores, dtype=float) + np.asarray(adjust, dtype=float)
    if peer_labels and n_agents > 1:
        total = total + cfg.kappa / (n_agents - 1) * np.bincount(np.asarray(peer_labels, dtype=np.int64),
                                                                 minlength=len(total))
    total = total - total.max()
    out = np.exp(total)
    return out / out.sum()


def challenge_shift(own: np.ndarray, reference: np.ndarray, current: int, alternative: int,
                    cfg: StatDialogue) -> np.ndarray:
    """The change (K,) of a challenged member's ``adjust`` (module docstring).

    own / reference : the member's and the reference peer's last answer vectors.
    """
    if current == alternative:
        raise ConfigError("alternative", "a challenge needs an alternative different from the current answer")
    mine, theirs = log_vector(own), log_vector(reference)
    gap = (theirs[alternative] - theirs[current]) - (mine[alternative] - mine[current])
    shift = np.zeros(len(mine))
    shift[alternative] += cfg.compliance * gap / 2.0
    shift[current] -= cfg.compliance * gap / 2.0
    return shift


def tempered(p: np.ndarray, temperature: float) -> np.ndarray:
    """Probability vector(s) raised to 1 / temperature and renormalised (last axis)."""
    scores = log_vector(p) / float(temperature)
    scores = scores - scores.max(axis=-1, keepdims=True)
    out = np.exp(scores)
    return out / out.sum(axis=-1, keepdims=True)


def fit_temperature(oof: np.ndarray, labels: Sequence[int]) -> float:
    """The temperature on :data:`TEMPERATURES` that minimises the mean negative
    log-likelihood of the true labels under the tempered out-of-fold vectors (1.0 when
    there are no cases)."""
    y = np.asarray(labels, dtype=np.int64)
    if not len(y):
        return 1.0
    logs = log_vector(oof)
    best, best_nll = 1.0, math.inf
    for t in TEMPERATURES:
        scores = logs / t
        scores = scores - scores.max(axis=1, keepdims=True)
        nll = float(np.mean(np.log(np.exp(scores).sum(axis=1)) - scores[np.arange(len(y)), y]))
        if nll < best_nll - 1e-12:
            best, best_nll = float(t), nll
    return best
