"""Write ``data/examples/abdominal_pain_cases.jsonl``: an example case file of 275 invented
abdominal-pain cases in five classes, none of them a DDXPlus-8 class.

The cases are written the way a teaching collection is: a sentence or two of history and a
sentence or two of examination, each also given as its own view (``history``, ``exam``).
They are invented from per-class findings (typical ones often, atypical ones sometimes,
findings shared between classes freely), so no single finding settles a case.  They
describe no real patient.  Deterministic: the same seed writes the same bytes.

    python scripts/make_example_cases.py [--seed 7] [--out data/examples/abdominal_pain_cases.jsonl]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

COUNTS = {"Gastroenteritis": 80, "Renal_colic": 60, "Biliary_colic": 55, "Appendicitis": 50,
          "Ectopic_pregnancy": 30}
"""Cases per class: 275 in all, the two high-risk classes (appendicitis, ectopic pregnancy) the rarer."""

# per class: (history findings, exam findings), each a (probability, phrase) list
FINDINGS: dict[str, tuple[list[tuple[float, str]], list[tuple[float, str]]]] = {
    "Gastroenteritis": (
        [(0.85, "diarrhoea several times since yesterday"), (0.7, "vomiting"), (0.5, "crampy pain all over the belly"),
         (0.35, "a family member with the same symptoms"), (0.3, "a meal at a street stall two days ago"),
         (0.25, "a mild fever"), (0.15, "pain that started around the navel")],
        [(0.7, "diffuse mild tenderness without guarding"), (0.6, "hyperactive bowel sounds"),
         (0.4, "dry mucous membranes"), (0.3, "a temperature of 37.9 C"), (0.15, "mild tenderness in the right lower quadrant")],
    ),
    "Renal_colic": (
        [(0.85, "sudden severe pain in the flank that comes in waves"), (0.6, "pain spreading to the groin"),
         (0.5, "cannot lie still"), (0.4, "blood in the urine"), (0.35, "vomiting"),
         (0.25, "a similar episode last year"), (0.15, "pain that started around the navel")],
        [(0.75, "tenderness at the costovertebral angle"), (0.55, "blood on the urine dipstick"),
         (0.4, "a soft abdomen"), (0.3, "a pulse of 105"), (0.1, "mild tenderness in the right lower quadrant")],
    ),
    "Biliary_colic": (
        [(0.85, "pain under the right ribs after a fatty meal"), (0.6, "pain going through to the right shoulder blade"),
         (0.5, "nausea"), (0.4, "episodes like this for months, each lasting a few hours"), (0.3, "vomiting"),
         (0.2, "a mild fever"), (0.15, "pale stools")],
        [(0.7, "tenderness under the right costal margin"), (0.45, "a positive Murphy sign"),
         (0.3, "an ultrasound report of gallstones"), (0.25, "a temperature of 37.8 C"),
         (0.15, "faint yellowing of the eyes")],
    ),
    "Appendicitis": (
        [(0.8, "pain that began around the navel and moved to the right lower belly"), (0.65, "loss of appetite"),
         (0.5, "nausea"), (0.35, "vomiting once"), (0.3, "pain worse when walking or coughing"),
         (0.25, "a mild fever"), (0.15, "loose stools")],
        [(0.8, "tenderness in the right lower quadrant"), (0.55, "guarding over McBurney's point"),
         (0.45, "rebound tenderness"), (0.4, "a temperature of 38.1 C"), (0.3, "a raised white cell count"),
         (0.15, "diffuse mild tenderness without guarding")],
    ),
    "Ectopic_pregnancy": (
        [(0.8, "a missed period about seven weeks ago"), (0.7, "one-sided lower abdominal pain"),
         (0.55, "light vaginal bleeding"), (0.35, "feeling faint on standing"), (0.3, "shoulder-tip pain"),
         (0.2, "nausea"), (0.15, "pain that started around the navel")],
        [(0.7, "a positive urine pregnancy test"), (0.55, "tenderness in one iliac fossa"),
         (0.4, "a pulse of 112 and a blood pressure of 96/60"), (0.35, "tenderness on cervical motion"),
         (0.15, "tenderness in the right lower quadrant")],
    ),
}
SHARED = ([(0.45, "abdominal pain since this morning"), (0.3, "nausea"), (0.2, "feeling generally unwell"),
           (0.15, "a mild fever")],
          [(0.35, "a soft abdomen with some tenderness"), (0.2, "a temperature of 37.6 C"), (0.15, "a pulse of 98")])
"""Findings any class may show."""
TYPICAL = 0.6
"""Each class's own findings are shown with their probability times this (the cases are
vaguer than a textbook's)."""
MISLEADING = 0.3
"""The chance a case also shows one finding typical of another class."""
FEMALE_ONLY = {"Ectopic_pregnancy"}
OPENERS = ("{age}-year-old {sex} with {what}.", "A {sex} aged {age} comes in with {what}.",
           "{Sex}, {age}, presents with {what}.", "Seen today: a {age}-year-old {sex} reporting {what}.")
EXAM_OPENERS = ("On examination: {what}.", "Examination shows {what}.", "Findings: {what}.", "The doctor notes {what}.")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _draw(rng: np.random.Generator, pool: list[tuple[float, str]]) -> list[str]:
    got = [phrase for p, phrase in pool if rng.random() < p]
    if not got:  # a case says at least one thing
        got = [pool[int(rng.integers(len(pool)))][1]]
    return [got[i] for i in rng.permutation(len(got))]


def _pools(rng: np.random.Generator, label: str) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """The case's findings to draw from: its class's (made vaguer), the shared ones, and
    sometimes one of another class's."""
    own = [[(p * TYPICAL, f) for p, f in part] + shared for part, shared in zip(FINDINGS[label], SHARED)]
    if rng.random() < MISLEADING:
        others = [x for x in FINDINGS if x != label and not (x in FEMALE_ONLY)]
        other = FINDINGS[others[int(rng.integers(len(others)))]]
        part = int(rng.integers(2))
        own[part] = own[part] + [(1.0, other[part][int(rng.integers(3))][1])]
    return own[0], own[1]


def make_case(rng: np.random.Generator, label: str, number: int) -> dict[str, object]:
    history, exam = _pools(rng, label)
    sex = "woman" if label in FEMALE_ONLY or rng.random() < 0.5 else "man"
    age = int(rng.integers(18, 41)) if label in FEMALE_ONLY else int(rng.integers(16, 80))
    said = _draw(rng, history)
    opener = OPENERS[int(rng.integers(len(OPENERS)))]
    story = opener.format(age=age, sex=sex, Sex=sex.capitalize(), what=_listed(said[:3]))
    if len(said) > 3:
        story += f" Also reports {_listed(said[3:])}."
    seen = _draw(rng, exam)
    found = EXAM_OPENERS[int(rng.integers(len(EXAM_OPENERS)))].format(what=_listed(seen))
    return {"id": f"abd-{number:03d}", "text": f"{story} {found}", "label": label,
            "views": {"history": story, "exam": found}}


def make_cases(seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    labels = [label for label, n in COUNTS.items() for _ in range(n)]
    order = rng.permutation(len(labels))
    return [make_case(rng, labels[i], number) for number, i in enumerate(order, start=1)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default="data/examples/abdominal_pain_cases.jsonl")
    args = p.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cases = make_cases(args.seed)
    out.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
