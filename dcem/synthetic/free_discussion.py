"""The free-discussion baseline among rule agents (section 5.2).

The agents talk for a fixed number of rounds with no mediator: round 1 alone, then
exchange rounds, each one exactly the round a D-CEM CONTINUE plays
(:meth:`RuleAgents.report`: every agent adds ``kappa`` to the labels its peers reported
in the previous round and samples again).  So free discussion and D-CEM differ only by
the mediator's actions.  The decision is the Bayes decision (eq. 8) of the D-CEM log pool
of the last round's reports.
"""
from __future__ import annotations

import logging

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.results import MethodRun, decided_run
from dcem.core.state import assess_reports
from common.errors import InputError
from common.fields import Whole, check
from dcem.synthetic.rule_agents import RuleAgents

__all__ = ["free_discussion"]

log = logging.getLogger(__name__)


def free_discussion(panel: Panel, agents: RuleAgents, cfg: MediatorConfig, *, rounds: int) -> MethodRun:
    """Unmediated discussion for ``rounds`` rounds (no steering, no stopping).

    Round 1 is ``agents.report(1)`` (the same draws as every other method built from
    the same seed); later rounds are the agents' exchange rounds, with their own
    generator and ``agents.kappa``.  Returns reports of shape (N, rounds, A).
    """
    check("rounds", rounds, Whole(1, msg="must be an integer >= 1, got {value!r}"), error=InputError)
    n, a = agents.n_cases, agents.n_agents
    reports = np.empty((n, rounds, a), dtype=np.int64)
    for i in range(rounds):
        reports[:, i] = agents.report(i + 1)
    state = assess_reports(panel, reports[:, -1], cfg)
    log.debug("free discussion: %d cases x %d rounds, final agreement %.2f", n, rounds,
              float((reports[:, -1] == reports[:, -1, :1]).all(axis=1).mean()))
    return decided_run("free", reports, state.decision)
