"""Finding a case on the Case walkthrough page: the case table and deep links.

The case table has one row per case (:data:`CASE_TABLE_COLUMNS`) with the outcome in
words and the energy of the final round.  A deep link ``?run=...&method=...&case=...&round=...``
opens the page on a view; :func:`resolve_choice` and :func:`resolve_round` check each part
and, for a bad one, give a message and a valid fallback.  No Streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence
from urllib.parse import urlencode

import pandas as pd

from dcem.store.run_reads import final_energies

__all__ = ["CASE_TABLE_COLUMNS", "LINK_KEYS", "WalkLink", "outcome_words", "final_energies", "case_table",
           "picked_case", "parse_link", "link_query", "resolve_choice", "resolve_round"]

CASE_TABLE_COLUMNS = ["case", "scenario", "outcome", "rounds", "final energy", "harmful", "escalated"]
LINK_KEYS = ("run", "method", "case", "round")


def outcome_words(action: str, certified: bool, budget: bool, *, mediated: bool = True) -> str:
    """A case's outcome in words: certified, decided at the round budget, escalated, or a
    decision without a mediator."""
    if action == "STOP_AND_ESCALATE":
        return "escalated to a human"
    if not mediated:
        return "decision (no mediator)"
    if action == "STOP_AND_DECIDE":
        return "certified decision" if certified else ("decision at the round budget" if budget else "decision")
    return action.lower().replace("_", " ")


def case_table(cases: pd.DataFrame, energies: Mapping[str, float], *, mediated: bool = True) -> pd.DataFrame:
    """The case table of some :func:`~studio.views.walkthrough.case_list` rows, in their
    order (:data:`CASE_TABLE_COLUMNS`); final energy is empty without a mediator."""
    if cases.empty:
        return pd.DataFrame(columns=CASE_TABLE_COLUMNS)
    return pd.DataFrame({
        "case": cases["case_id"].astype(str).to_numpy(),
        "scenario": cases["scenario"].astype(str).to_numpy(),
        "outcome": [outcome_words(a, bool(c), bool(b), mediated=mediated)
                    for a, c, b in zip(cases["action"], cases["certified"], cases["budget"])],
        "rounds": cases["rounds"].astype(int).to_numpy(),
        "final energy": [energies.get(str(c), float("nan")) for c in cases["case_id"]],
        "harmful": cases["harmful_consensus"].astype(bool).to_numpy(),
        "escalated": cases["escalated"].astype(bool).to_numpy()}, columns=CASE_TABLE_COLUMNS)


def picked_case(rows: Sequence[int], previous: Sequence[int] | None, case_ids: Sequence[str]) -> str | None:
    """The case a click on the table opens: the selected row's case when the selection
    changed since ``previous`` (a stale selection does not override the case chosen since)."""
    rows = list(rows)
    if not rows or rows == list(previous or []) or not 0 <= rows[0] < len(case_ids):
        return None
    return case_ids[rows[0]]


@dataclass(frozen=True)
class WalkLink:
    """The parts of a deep link; None where the link leaves a part out."""

    run: str | None = None
    method: str | None = None
    case: str | None = None
    round: str | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, k) is None for k in LINK_KEYS)


def parse_link(params: Mapping[str, object]) -> WalkLink:
    """The deep link in some query parameters (other parameters are ignored; a repeated one
    counts with its last value)."""
    def one(key: str) -> str | None:
        value = params.get(key)
        if isinstance(value, (list, tuple)):
            value = value[-1] if value else None
        return None if value is None or str(value).strip() == "" else str(value).strip()

    return WalkLink(*(one(k) for k in LINK_KEYS))


def link_query(run: str, method: str, case: str, number: int) -> str:
    """The relative link of a view, e.g. ``?run=ui-run&method=dcem&case=S1-0-3&round=2``."""
    return "?" + urlencode({"run": run, "method": method, "case": case, "round": int(number)})


def resolve_choice(wanted: str | None, options: Sequence[str], what: str, fallback: str) -> tuple[str, str | None]:
    """``wanted`` when it is one of ``options``; otherwise ``fallback`` and a message
    saying what the link asked for (no message when the link names nothing)."""
    if wanted is None:
        return fallback, None
    if wanted in options:
        return wanted, None
    return fallback, f"The link asks for {what} {wanted!r}, which is not available here; showing {fallback!r} instead."


def resolve_round(wanted: str | None, last: int) -> tuple[int, str | None]:
    """The linked round when it is a whole number in 1..last; otherwise the nearest valid
    round (1 when it is not a number) and a message."""
    if wanted is None:
        return 1, None
    try:
        number = int(wanted)
    except ValueError:
        return 1, f"The link asks for round {wanted!r}, which is not a round number; showing round 1."
    if 1 <= number <= last:
        return number, None
    shown = min(max(number, 1), last)
    return shown, (f"The link asks for round {number}, but this case has rounds 1 to {last}; "
                   f"showing round {shown}.")
