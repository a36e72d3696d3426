"""docs/group_views.md's table of the view group's first stage is the shipped records'
(data/results/training/ddx-views-r1, -r2, -r3): accuracy, counts, the most frequent
answer and every class's recall on the debate fold after training."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from training.shipped import read_shipped

ROOT = Path(__file__).resolve().parents[2]
_ROW = re.compile(r"^\| (R\d) \(([a-z-]+)\) \| (\d\.\d{3}) \((\d+) of (\d+)\) \| ([A-H]) on (\d+) % \| ([^|]*) \|$",
                  re.MULTILINE)
LETTERS = "ABCDEFGH"


SECOND = "### Stage 1 again, with the log-likelihood term"
"""The heading of docs/group_views.md's table of the second training's members (ddx-views2-r1 ...)."""


def _rows(prefix: str) -> dict[str, tuple[str, ...]]:
    """The stage-1 table of the first training (``ddx-views``: the rows before :data:`SECOND`)
    or of the second (``ddx-views2``: the rows after it)."""
    text = (ROOT / "docs/group_views.md").read_text(encoding="utf-8")
    assert SECOND in text, f"docs/group_views.md has no section {SECOND!r}"
    before, after = text.split(SECOND, 1)
    return {m.group(1): m.groups() for m in _ROW.finditer(before if prefix == "ddx-views" else after)}


@pytest.mark.parametrize("prefix", ["ddx-views", "ddx-views2"])
@pytest.mark.parametrize("agent", ["R1", "R2", "R3"])
def test_the_stage_one_table_is_the_record(prefix: str, agent: str) -> None:
    row = _rows(prefix).get(agent)
    assert row is not None, f"docs/group_views.md has no stage-1 row for {agent} of {prefix}"
    export = read_shipped(f"{prefix}-{agent.lower()}")
    assert export.run["data_name"].endswith(f":{agent}@{row[1]}")  # the member read the view the row names
    answers = export.answers[(export.answers["step"] == export.answers["step"].max())
                             & (export.answers["split"] == "debate-fold")]
    right = int((answers["answer"] == answers["truth"]).sum())
    assert (row[2], int(row[3]), int(row[4])) == (f"{right / len(answers):.3f}", right, len(answers))
    shares = answers["answer"].value_counts(normalize=True)
    assert (row[5], int(row[6])) == (shares.index[0], round(100 * shares.iloc[0]))
    recall = [float(x) for x in re.findall(r"\*{0,2}(\d\.\d\d)\*{0,2}", row[7])[:8]]
    want = [((answers["truth"] == k) & (answers["answer"] == k)).sum() / (answers["truth"] == k).sum() for k in LETTERS]
    assert recall == [round(float(x), 2) for x in pd.Series(want)]


def test_the_debate_stage_sentences_are_the_record() -> None:
    """Round-1 accuracy on CAL before and after the debate stage, as docs/group_views.md states it."""
    text = " ".join((ROOT / "docs/group_views.md").read_text(encoding="utf-8").split())
    evals = read_shipped("ddx-views-debate").evals
    for step in (0, int(evals["step"].max())):
        acc = {s.split(":")[1]: n / m for s, n, m in evals[evals["step"] == step][["split", "n_correct", "n_items"]]
               .itertuples(index=False)}
        sentence = (f"R1 {acc['R1']:.3f}, R2 {acc['R2']:.3f}, R3 {acc['R3']:.3f}, their plurality "
                    f"{acc['plurality']:.3f}")
        assert sentence in text, sentence


def test_the_judge_stage_sentence_is_the_record() -> None:
    """REPRODUCTION.md's judge-against-R2 sentence: both counts and the paired bootstrap
    come from the two shipped records' CAL answers."""
    import numpy as np

    from common.intervals import paired_bootstrap
    from training.report import BOOTSTRAP_SEED, RESAMPLES

    judge = read_shipped("ddx-views-judge").answers
    debate = read_shipped("ddx-views-debate").answers
    j = judge[judge["step"] == judge["step"].max()].set_index("item_id").sort_index()
    r2 = debate[(debate["step"] == debate["step"].max()) & (debate["split"] == "cal:R2")].set_index("item_id")
    r2 = r2.reindex(j.index)
    assert not r2["answer"].isna().any(), "the judge's CAL cases are not R2's"
    jr = (j["answer"] == j["truth"]).to_numpy(dtype=float)
    rr = (r2["answer"] == r2["truth"]).to_numpy(dtype=float)
    diff, low, high = paired_bootstrap(rr, jr, np.random.default_rng(BOOTSTRAP_SEED), resamples=RESAMPLES)
    n = len(j)
    sentence = (f"it is right on {int(jr.sum())} of {n} ({jr.mean():.3f}), against R2's round-1 answer alone on the "
                f"same cases {int(rr.sum())} of {n} ({rr.mean():.3f}): the paired difference, {diff:+.3f} with 95 % "
                f"bootstrap interval [{low:+.3f}, {high:+.3f}], spans 0")
    text = " ".join((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8").split())
    assert sentence in text, sentence


def test_the_second_debate_stage_sentences_are_the_record() -> None:
    """REPRODUCTION.md's account of the second debate stage: each member's round-1 accuracy
    on CAL after the stage and before it, as the shipped record holds them."""
    text = " ".join((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8").split())
    evals = read_shipped("ddx-views2-debate").evals
    acc = {(s.split(":")[1], int(step)): n / m for s, step, n, m in
           evals[["split", "step", "n_correct", "n_items"]].itertuples(index=False)}
    last = int(evals["step"].max())
    assert (f"R1 is right on {acc['R1', last]:.3f} of the CAL cases ({acc['R1', 0]:.3f} before the stage" in text)
    assert f"R3 on {acc['R3', last]:.3f} ({acc['R3', 0]:.3f})" in text
    assert f"R2 stays where it was ({acc['R2', 0]:.3f}, {acc['R2', last]:.3f};" in text


_DEBATE2 = re.compile(r"^\| (R\d \([a-z-]+\)|their plurality) \| (\d\.\d{3}) \| (\d\.\d{3}) \((\d\.\d{3}) to "
                      r"(\d\.\d{3})\) \| ([A-H]) on (\d+) % \| ([^|]*) \|$", re.MULTILINE)


_NAMES = ("Anaphylaxis", "Pulmonary embolism", "NSTEMI/STEMI", "Myocarditis", "URTI", "Viral pharyngitis",
          "GERD", "Bronchitis")
"""The diagnoses behind the letters A to H, as the docs write them."""


def test_the_second_debate_stage_table_is_the_record() -> None:
    """docs/group_views.md's table of the second debate stage (ddx-views2-debate): round-1
    accuracy on CAL before and after, its Wilson interval, the most frequent answer and the
    lowest recall, for each member and their plurality."""
    from common.intervals import wilson_interval

    text = (ROOT / "docs/group_views.md").read_text(encoding="utf-8").split(SECOND, 1)[1]
    rows = {m.group(1).split(" ")[0] if m.group(1).startswith("R") else "plurality": m.groups()
            for m in _DEBATE2.finditer(text)}
    assert set(rows) == {"R1", "R2", "R3", "plurality"}, sorted(rows)
    export = read_shipped("ddx-views2-debate")
    evals, answers = export.evals, export.answers
    last = int(evals["step"].max())
    for who, row in rows.items():
        before = evals[(evals["step"] == 0) & (evals["split"] == f"cal:{who}")].iloc[0]
        after = evals[(evals["step"] == last) & (evals["split"] == f"cal:{who}")].iloc[0]
        low, high = wilson_interval(int(after["n_correct"]), int(after["n_items"]))
        assert row[1:5] == (f"{before['n_correct'] / before['n_items']:.3f}",
                            f"{after['n_correct'] / after['n_items']:.3f}", f"{low:.3f}", f"{high:.3f}"), who
        assert (row[5], int(row[6])) == (after["top_letter"], round(100 * after["top_letter_share"])), who
        if who == "plurality":
            assert after["n_correct"] == after["n_items"] and row[7].strip() == "every class 1.00"
            continue
        a = answers[(answers["step"] == last) & (answers["split"] == f"cal:{who}")]
        recall = {k: ((a["truth"] == k) & (a["answer"] == k)).sum() / (a["truth"] == k).sum()
                  for k in sorted(a["truth"].unique())}
        worst = min(recall, key=lambda k: recall[k])
        name = _NAMES[LETTERS.index(worst)]
        assert row[7].strip() == f"{name} {recall[worst]:.2f}", (who, name, recall[worst])


def test_the_second_judge_sentences_are_the_record() -> None:
    """REPRODUCTION.md and docs/group_views.md on the second judge (ddx-views2-judge): its CAL
    accuracy after, its most frequent answer before, and R1's round-1 count on the same cases."""
    judge = read_shipped("ddx-views2-judge")
    evals = judge.evals.set_index("step")
    before, after = evals.loc[evals.index.min()], evals.loc[evals.index.max()]
    debate = read_shipped("ddx-views2-debate").answers
    j = judge.answers[judge.answers["step"] == judge.answers["step"].max()].set_index("item_id")
    r1 = debate[(debate["step"] == debate["step"].max()) & (debate["split"] == "cal:R1")].set_index("item_id")
    r1 = r1.reindex(j.index)
    r1_right = int((r1["answer"] == r1["truth"]).sum())
    differ = int((j["answer"] != r1["answer"]).sum())
    share = f"{round(100 * before['top_letter_share'])} %"
    right, n = int(after["n_correct"]), int(after["n_items"])
    repro = " ".join((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8").split())
    assert (f"Before training the judge answers {before['top_letter']} (Myocarditis) on {share} of CAL cases; after "
            f"{int(evals.index.max())} steps it is right on {right} of {n} ({right / n:.3f})") in repro
    assert f"R1's round-1 answer is right on {r1_right} too (they differ on {'two' if differ == 2 else differ} cases" \
           in repro
    docs = " ".join((ROOT / "docs/group_views.md").read_text(encoding="utf-8").split())
    assert (f"is right on {right} of the {n} CAL cases ({right / n:.3f}; "
            f"{before['n_correct'] / before['n_items']:.3f} before, {before['top_letter']} on {share})") in docs
    assert f"R1's round-1 answer is right on {r1_right} as well" in docs
