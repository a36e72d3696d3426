"""The decision of a mediated round beside its loss matrix and high-risk classes.

The Bayes decision is the class d with the lowest expected loss R(d) = sum_y L[d, y] Q(y)
under the pooled belief Q (eq. 3, 8-9).  :func:`decision_table` shows, per class, whether
it is high-risk, Q, R(class) and the loss L[d, class] the decision would cost if that class
were the truth; :func:`loss_frame` is the full loss matrix; :func:`cell_loss` (from
:mod:`dcem.store.case_reads`) is the loss matrix of a case's cell.  No Streamlit here.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from dcem.store.case_reads import cell_loss

__all__ = ["DECISION_COLUMNS", "HIGH_RISK_MARK", "cell_loss", "decision_table", "loss_frame"]

DECISION_COLUMNS = ["class", "high-risk", "pooled Q", "expected loss", "cost if true"]
"""expected loss: R(class) = sum_y L[class, y] Q(y); cost if true: L[decision, class]."""
HIGH_RISK_MARK = "⚠"


def decision_table(labels: Sequence[str], pooled: Sequence[float], loss: np.ndarray, high_risk: Sequence[int],
                   decision: int) -> pd.DataFrame:
    """One row per class (:data:`DECISION_COLUMNS`); the decision's row has the lowest
    expected loss (ties to the lowest index) and its class name ends in '(decision)'."""
    q = np.asarray(pooled, dtype=float)
    loss = np.asarray(loss, dtype=float)
    risks = loss @ q
    high = set(int(h) for h in high_risk)
    return pd.DataFrame({
        "class": [f"{lab} (decision)" if j == decision else str(lab) for j, lab in enumerate(labels)],
        "high-risk": [HIGH_RISK_MARK if j in high else "" for j in range(len(labels))],
        "pooled Q": q.round(3), "expected loss": risks.round(3), "cost if true": loss[int(decision)].round(3)},
        columns=DECISION_COLUMNS)


def loss_frame(labels: Sequence[str], loss: np.ndarray, high_risk: Sequence[int]) -> pd.DataFrame:
    """The loss matrix with rows 'decide <class>' and columns 'true <class>' (a high-risk
    true class is marked with :data:`HIGH_RISK_MARK`)."""
    high = set(int(h) for h in high_risk)
    columns = [f"true {lab}" + (f" {HIGH_RISK_MARK}" if j in high else "") for j, lab in enumerate(labels)]
    return pd.DataFrame(np.asarray(loss, dtype=float), index=pd.Index([f"decide {lab}" for lab in labels],
                                                                        name="decision"), columns=columns)
