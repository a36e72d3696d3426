"""The view group's critic and measures, on small hand-made answers."""
from __future__ import annotations

import numpy as np

from sag.training.view_critic import PluralityCritic, plurality_letters
from sag.views.measures import (answer_changes, answer_row, cdr, chance_cdr, pooled_letters, vote_letters,
                               zero_recall_words)

LABELS = list("ABC")


def test_plurality_breaks_ties_by_summed_probability() -> None:
    joint = np.array([[0, 0], [0, 2], [1, 1]])  # three agents, two questions: A A B, then A C B
    probs = np.eye(3)[joint].astype(float)
    assert plurality_letters(joint, probs).tolist() == [0, 0]  # a majority; a tie of equal mass: the earliest
    joint = np.array([[0], [1], [2]])
    probs = np.array([[[0.5, 0.3, 0.2]], [[0.1, 0.8, 0.1]], [[0.2, 0.2, 0.6]]])
    assert plurality_letters(joint, probs).tolist() == [1]  # a three-way tie goes to the most mass


def test_the_critic_pays_for_being_right_and_more_for_deciding_the_group() -> None:
    critic = PluralityCritic(np.array([0]))
    joint = np.array([[1], [0], [1]])  # agent 0 and 2 say B, agent 1 says A; truth A
    probs = np.eye(3)[joint].astype(float)
    values = critic([0], joint, probs)
    # agent 0 switching to A makes A the plurality: own +1 and group +1; to C, a three-way tie
    # of equal mass that goes to the earliest letter, A: own -1, group +1
    assert values[0, 0].tolist() == [2.0, -2.0, 0.0]
    # agent 1 cannot move the group (B has two votes whatever it says): only its own answer counts
    assert values[1, 0].tolist() == [0.0, -2.0, -2.0]


def test_rows_measure_accuracy_recall_top_answer_and_the_paired_difference() -> None:
    truth = list("AABBCC")
    row = answer_row("x", list("AABBAA"), truth, LABELS, group=list("AABBCC"))
    assert row.n_correct == 4 and row.recall == (1.0, 1.0, 0.0) and row.top_answer == "A"
    assert abs(row.top_share - 4 / 6) < 1e-12 and row.diff == -2 / 6 and row.diff_high <= 0
    assert zero_recall_words(row, ["Anaphylaxis", "Bronchitis", "Myocarditis"]) == ["never diagnoses Myocarditis"]
    escalated = answer_row("y", ["ESCALATE", "A", "B", "B", "C", "C"], truth, LABELS)
    assert escalated.n_correct == 5 and escalated.answered == 5


def test_vote_pool_changes_and_cdr() -> None:
    letters = np.array([[0, 1], [0, 2], [1, 2]])
    assert vote_letters(letters, np.eye(3)[letters], LABELS) == ["A", "C"]
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 300)
    good = np.where(rng.random(300) < 0.9, truth, (truth + 1) % 3)
    bad = rng.integers(0, 3, 300)
    cal = np.stack([good, bad])
    pooled = pooled_letters(cal, truth, np.array([[2, 0], [1, 1]]), LABELS)
    assert pooled == ["C", "A"]  # the reliable member decides, the one at chance does not
    changes = answer_changes("R1", list("ABCA"), list("AACB"), list("AACC"))
    assert (changes.wrong_to_right, changes.right_to_wrong, changes.wrong_to_wrong, changes.kept) == (1, 0, 1, 2)
    assert cdr({"c1": "A", "c2": "B"}, {"c1~sex": "A", "c1~age": "B", "c2~sex": "B"}) == (1 / 3, 3)
    assert chance_cdr(["A"] * 10) == 0.0 and abs(chance_cdr(list("AB")) - 0.5) < 1e-12
