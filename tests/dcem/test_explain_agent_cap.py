"""``explain`` caps an episode at the calibration set's shape (1,000 agents, 200 labels,
4,000,000 entries of agents x labels²), refusing larger documents before any work."""
from __future__ import annotations

from typing import Any

import pytest

from dcem.analysis.explain import explain
from dcem.calibration.csv_limits import MAX_AGENTS, MAX_LABELS
from common.errors import InputError

EYE = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]


def _doc(n_agents: int, k: int = 3) -> dict[str, Any]:
    labels = [f"l{i}" for i in range(k)]
    row = [[0.5 if i == j else 0.5 / (k - 1) for j in range(k)] for i in range(k)] if k != 3 else EYE
    return {"labels": labels, "confusion": [row] * n_agents,
            "loss": [[0 if d == y else 1 for y in range(k)] for d in range(k)],
            "reports": [[labels[a % k] for a in range(n_agents)]]}


@pytest.mark.parametrize("n_agents", [MAX_AGENTS + 1, 10_000])
def test_more_agents_than_a_calibration_set_are_refused_before_any_array(
        n_agents: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused from the document's lengths alone: no array of the episode is built (how
    long the refusal takes is in benchmarks/growth_checks.py)."""
    import dcem.analysis.explain_input as explain_input

    def no_array(*args: object, **kwargs: object) -> None:
        raise AssertionError("an array was built before the refusal")

    monkeypatch.setattr(explain_input, "number_array", no_array)
    with pytest.raises(InputError, match=rf"^confusion: {n_agents:,} agents .* at most {MAX_AGENTS:,} agents"):
        explain(_doc(n_agents))


def test_too_many_labels_or_table_entries_are_refused() -> None:
    with pytest.raises(InputError, match=rf"^labels: {MAX_LABELS + 1} labels"):
        explain(_doc(1, MAX_LABELS + 1))
    with pytest.raises(InputError, match="^confusion: 101 agents and 200 labels need 4,040,000"):
        explain(_doc(101, MAX_LABELS))


def test_an_episode_within_the_caps_is_explained() -> None:
    out = explain(_doc(200))
    first = out["rounds"][0]
    assert len(first["weights"]) == 200 and out["outcome"]["decision"] in ("l0", "l1", "l2")
