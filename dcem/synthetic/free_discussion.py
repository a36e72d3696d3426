"""The free-discussion baseline among rule agents (section 5.2).

The agents talk for a fixed number of rounds with no mediator.  In round ``t >= 2`` each
agent adds a social-influence bonus ``kappa`` to the score of every label its peers
reported in round ``t - 1`` (``kappa / (A - 1)`` per peer, so the total pull is
``kappa`` for any panel size) and samples again.  The decision is the Bayes decision
(eq. 8) of the D-CEM log pool of the last round's reports.
"""
from __future__ import annotations

import logging

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.results import MethodRun, decided_run
from dcem.core.state import assess_reports
from dcem.errors import InputError
from dcem.synthetic.rule_agents import RuleAgents, sample_reports

__all__ = ["KAPPA", "free_discussion"]

log = logging.getLogger(__name__)

KAPPA = 1.0  # a peer's previous answer weighs about as much as one fired rule (1.0-1.7)


def free_discussion(panel: Panel, agents: RuleAgents, cfg: MediatorConfig, *, rounds: int,
                    kappa: float = KAPPA) -> MethodRun:
    """Unmediated discussion for ``rounds`` rounds (no steering, no stopping).

    Round 1 is ``agents.report(1)`` (the same draws as every other method built from
    the same seed); later rounds add the social bonus to the scores and sample with the
    agents' own generator.  Decision: the D-CEM log-pool Bayes decision of the last
    round.  Returns reports of shape (N, rounds, A).
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError("rounds", f"must be an integer >= 1, got {rounds!r}")
    if kappa < 0 or not np.isfinite(kappa):
        raise InputError("kappa", f"must be finite and >= 0, got {kappa}")
    n, a, k = agents.n_cases, agents.n_agents, len(agents.labels)
    reports = np.empty((n, rounds, a), dtype=np.int64)
    reports[:, 0] = agents.report(1)
    share = kappa / max(a - 1, 1)
    for i in range(1, rounds):
        prev = np.eye(k)[reports[:, i - 1]]  # (N, A, K) one-hot of each agent's last report
        peers = prev.sum(axis=1, keepdims=True) - prev  # labels the other agents gave
        reports[:, i] = sample_reports(agents.scores() + share * peers, agents.rng)
    state = assess_reports(panel, reports[:, -1], cfg)
    log.debug("free discussion: %d cases x %d rounds, final agreement %.2f", n, rounds,
              float((reports[:, -1] == reports[:, -1, :1]).all(axis=1).mean()))
    return decided_run("free", reports, state.decision)
