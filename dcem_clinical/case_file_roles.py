"""The scenario roles of a researcher's case file, in words built from its own labels.

The shipped datasets' roles name their classes (DDXPlus: URTI or GERD; MedQA-Tri:
Gastroenterology).  A case file's classes are whatever the researcher wrote, so:

- the anchor (S2's agent B, every agent in S3b) settles on the file's most frequent class
  that is not high-risk (the benign default a busy clinic sees most; ties: label order;
  every class high-risk: the most frequent);
- S3a's two complementary members are sharp on the high-risk classes and unsure about the
  rest, and the other way round (no or every class high-risk: the first and the second
  half of the labels in label order);
- the areas (S3a with more than two members) are the labels themselves, in words
  (underscores read as spaces).
"""
from __future__ import annotations

from collections import Counter

from clinical.datasets import ClinicalDataset
from dcem_clinical.roles import RoleWords, _listed

__all__ = ["file_role_words", "label_words"]


def label_words(label: str) -> str:
    """A label as it reads in a sentence (``Kawasaki_disease`` -> ``Kawasaki disease``)."""
    return " ".join(label.replace("_", " ").split())


def file_role_words(dataset: ClinicalDataset) -> RoleWords:
    k = len(dataset.labels)
    counts = Counter(c.label for c in dataset.cases)
    benign = [i for i in range(k) if i not in dataset.high_risk] or list(range(k))
    anchor = max(benign, key=lambda i: (counts[i], -i))
    name = label_words(dataset.labels[anchor])
    anchor_text = (f"You work where most patients turn out to have {name}. Unless a case is unmistakably "
                   f"something else, you settle on {name}.")
    high = tuple(sorted(dataset.high_risk))
    if high and len(high) < k:
        first, second = high, tuple(i for i in range(k) if i not in high)
    else:
        first, second = tuple(range((k + 1) // 2)), tuple(range((k + 1) // 2, k))
    words = [label_words(x) for x in dataset.labels]

    def sharp(mine: tuple[int, ...], others: tuple[int, ...]) -> str:
        return (f"You are a specialist who is sharp on {_listed([words[i] for i in mine])}, and you are unsure "
                f"about {_listed([words[i] for i in others])}.")

    return RoleWords(anchor_text, (anchor,), (sharp(first, second), sharp(second, first)), (first, second),
                     tuple(words))
