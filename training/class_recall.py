"""Recall per class: of the held-out items whose right answer is a class, how many got it.

Accuracy hides a class a model never gets: the shipped DDXPlus-8 diagnostician is right on
94.5 % of its held-out cases and on none of the 9 Myocarditis ones.  These functions take
answers as the training record stores them (columns ``split``, ``step``, ``item_id``,
``answer``, ``truth``; any run with ``answer`` and ``truth`` columns can use
:func:`recall_table`) and give one row per class, and a sentence for each class of recall 0
(the page shows it in red).  Pure pandas: no UI, no model.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

__all__ = ["RECALL_COLUMNS", "recall_table", "never_right", "heldout_class_recall", "letter_names",
           "split_dataset"]

RECALL_COLUMNS = ["Class", "Items", "Right", "Recall", "Answered"]


def recall_table(truth: Sequence[str], answer: Sequence[str], *, names: Mapping[str, str] | None = None,
                 classes: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per class (``classes``, default the classes among ``truth``, sorted): its name
    (``names`` maps a stored answer such as a letter to its class name), the items whose
    right answer it is, how many of them were answered right, the recall, and how often the
    class was given as an answer at all (right or wrong)."""
    frame = pd.DataFrame({"truth": [str(t) for t in truth], "answer": [str(a) for a in answer]})
    keys = list(classes) if classes is not None else sorted(set(frame["truth"]))
    names = dict(names or {})
    rows = []
    for key in keys:
        mine = frame[frame["truth"] == key]
        right = int((mine["answer"] == key).sum())
        rows.append({"Class": names.get(key, key), "Items": len(mine), "Right": right,
                     "Recall": right / len(mine) if len(mine) else float("nan"),
                     "Answered": int((frame["answer"] == key).sum())})
    return pd.DataFrame(rows, columns=RECALL_COLUMNS)


def never_right(table: pd.DataFrame, *, diagnoses: bool = True) -> list[str]:
    """A sentence for each class of a :func:`recall_table` with items and recall 0:
    "Never diagnoses Myocarditis: 0 of its 9 held-out cases right; it never answers
    Myocarditis." (``diagnoses=False``: a question's option letter, "Never right when the
    answer is B ...")."""
    out = []
    for r in table.itertuples(index=False):
        if r.Items == 0 or r.Right:
            continue
        given = (f"it never answers {r.Class}" if r.Answered == 0 else
                 f"it answers {r.Class} {r.Answered} time{'s' if r.Answered != 1 else ''}, always wrongly")
        if diagnoses:
            out.append(f"Never diagnoses {r.Class}: 0 of its {r.Items} held-out cases right; {given}.")
        else:
            out.append(f"Never right when the answer is {r.Class}: 0 of {r.Items} held-out items; {given}.")
    return out


def split_dataset(split: str, data_name: str) -> str:
    """The benchmark a held-out split measures: ``heldout:<name>`` names it; any other split
    (``heldout``, a view group's ``debate-fold`` or ``cal:R1``) is the run's own data (the
    first part of its data name)."""
    head, _, name = split.partition(":")
    return name if head == "heldout" and name else data_name.split(":", 1)[0].split("+", 1)[0]


def letter_names(dataset: str) -> dict[str, str] | None:
    """Option letter -> diagnosis for a dataset whose letters always stand for the same
    diagnoses (DDXPlus-8: A = Anaphylaxis ... H = Bronchitis, as its trained prompts and its
    eight-option questions order them); None for questions whose options differ by item."""
    if dataset != "ddxplus8":
        return None
    from clinical.ddxplus import LABELS

    return {chr(ord("A") + i): name for i, name in enumerate(LABELS)}


def heldout_class_recall(answers: pd.DataFrame, data_name: str) -> tuple[pd.DataFrame, list[str]]:
    """Per held-out split of a training record, recall per class before training (step 0)
    and after (the split's last step), and the red-flag sentences after training (each
    starting with the split's name)."""
    cols = ["Held-out set", "Class", "Items", "Recall before", "Recall after", "Right after", "Answered after"]
    if answers.empty:
        return pd.DataFrame(columns=cols), []
    frames, flags = [], []
    for split, part in answers.groupby("split", sort=True):
        last = int(part["step"].max())
        names = letter_names(split_dataset(str(split), data_name))
        classes = sorted(set(part["truth"]))
        before, after = (recall_table(p["truth"], p["answer"], names=names, classes=classes)
                         for p in (part[part["step"] == 0], part[part["step"] == last]))
        frames.append(pd.DataFrame({"Held-out set": split, "Class": after["Class"], "Items": after["Items"],
                                    "Recall before": before["Recall"],
                                    "Recall after": after["Recall"], "Right after": after["Right"],
                                    "Answered after": after["Answered"]}))
        if last:
            flags += [f"{split}: {s}" for s in never_right(after, diagnoses=names is not None)]
    return pd.concat(frames, ignore_index=True)[cols], flags
