"""Scenario roles of the clinical setting (Appendix H.1), in this project's own words.

The four scenarios are realised only by a short role constraint in each agent's system
prompt; nothing else about the agents changes:

- S1 ideal: both agents are neutral senior clinicians;
- S2 asymmetric: agent A is neutral; agent B carries the dataset's default-label anchor,
  a habit of settling on a benign (DDXPlus: URTI or GERD) or fixed (MedQA-Tri:
  Gastroenterology) answer, which makes it miss high-risk cases systematically;
- S3a noisy-complementary: A and B trust different, disjoint parts of the label set
  (DDXPlus: acute cardiac and pulmonary-embolism care versus outpatient primary care;
  MedQA-Tri: cardiology, gastroenterology and endocrinology versus pulmonology,
  neurology and infectious disease);
- S3b noisy-non-complementary: both agents carry the same anchor as B in S2.

A panel of N > 2 agents (:func:`scenario_roles` with ``n_agents``): S1 all neutral; S2 the
last agent anchored, the others neutral; S3a the dataset's areas (one per label, in
label order) dealt round-robin, agent i sharp on areas i, i + N, ... and unsure about
the rest, so the strengths are disjoint and together cover every label; S3b every agent
anchored.

A researcher's case file gets the same four scenarios in words built from its own labels
(:mod:`dcem_clinical.case_file_roles`), never DDXPlus's.  With two agents the roles are the two-agent ones above, word for word.

A statistical member has no prompt: :func:`scenario_leanings` gives the same roles as
label indices (the anchor labels, or the areas a member is sharp on), which
:mod:`dcem_clinical.stat_dialogue` turns into the member's lean.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from dcem.core.vocabulary import SCENARIOS
from common.errors import InputError
from common.fields import Whole, check
from dcem_clinical.prompts import ROLE_NEUTRAL

__all__ = ["DATASETS", "RoleWords", "role_words", "scenario_roles", "round_robin_roles", "Leaning", "NEUTRAL", "ANCHOR", "AREAS",
           "scenario_leanings"]

DATASETS = ("ddxplus8", "medqa-tri")

_ANCHOR = {
    "ddxplus8": ("You work in a busy walk-in clinic where nearly every patient turns out to have a "
                 "mild upper respiratory infection or reflux. Unless a case is unmistakably something "
                 "else, you settle on URTI or GERD."),
    "medqa-tri": ("You are a gastroenterologist by training and habit: you read most presentations as "
                  "digestive problems and choose Gastroenterology unless another field is unmistakable."),
}
_COMPLEMENT = {
    "ddxplus8": (
        ("You are an emergency cardiology specialist. You are sharp on anaphylaxis, pulmonary embolism, "
         "acute coronary syndromes and myocarditis, and you are unsure about everyday outpatient "
         "complaints such as colds, sore throats, reflux and bronchitis."),
        ("You are an outpatient family doctor. You are sharp on colds, viral sore throats, reflux and "
         "bronchitis, and you are unsure about acute cardiac, allergic and embolic emergencies."),
    ),
    "medqa-tri": (
        ("You are a specialist in cardiology, gastroenterology and endocrinology, and you are unsure "
         "about lung, brain, infection and kidney problems."),
        ("You are a specialist in pulmonology, neurology and infectious disease, and you are unsure "
         "about heart, digestive, hormonal and kidney problems."),
    ),
}


_AREAS = {  # one plain-words area per label, in label order
    "ddxplus8": ("anaphylaxis", "pulmonary embolism", "acute coronary syndromes", "myocarditis",
                 "colds", "viral sore throats", "reflux", "bronchitis"),
    "medqa-tri": ("heart problems", "lung problems", "brain or nerve problems", "digestive problems",
                  "hormonal problems", "infections", "kidney or urinary problems"),
}


@dataclass(frozen=True)
class RoleWords:
    """A dataset's role material: the anchor sentence and its labels, the two complementary
    sentences and their label sets, and one plain-words area per label."""

    anchor: str
    anchor_labels: tuple[int, ...]
    complement: tuple[str, str]
    complement_labels: tuple[tuple[int, ...], tuple[int, ...]]
    areas: tuple[str, ...]


def role_words(dataset: str) -> RoleWords:
    """The role material of a shipped dataset or of a case file in use
    (:func:`dcem_clinical.case_file_roles.file_role_words`)."""
    if dataset in DATASETS:
        return RoleWords(_ANCHOR[dataset], _ANCHOR_LABELS[dataset], _COMPLEMENT[dataset],  # type: ignore[arg-type]
                         _COMPLEMENT_LABELS[dataset], _AREAS[dataset])  # type: ignore[arg-type]
    from clinical.datasets import is_file_dataset, known_dataset

    found = known_dataset(dataset) if is_file_dataset(dataset) else None
    if found is None:
        raise InputError("dataset", f"unknown dataset {dataset!r} (known: {', '.join(DATASETS)} or a case file)")
    from dcem_clinical.case_file_roles import file_role_words

    return file_role_words(found)


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def round_robin_roles(dataset: str, n_agents: int) -> tuple[str, ...]:
    """S3a for N > 2: the dataset's areas dealt round-robin, one strength set per agent."""
    areas = role_words(dataset).areas
    roles = []
    for a in range(n_agents):
        mine = [x for i, x in enumerate(areas) if i % n_agents == a]
        if not mine:
            roles.append(ROLE_NEUTRAL)
            continue
        others = [x for x in areas if x not in mine]
        roles.append(f"You are a specialist who is sharp on {_listed(mine)}, and you are unsure about "
                     f"{_listed(others)}.")
    return tuple(roles)


def scenario_roles(dataset: str, scenario: str, n_agents: int = 2) -> tuple[str, ...]:
    """The role sentences of the ``n_agents`` agents (A, B, C ...) for a dataset and scenario."""
    check("agents", n_agents, Whole(2, msg="a panel needs at least two agents, got {value!r}"), error=InputError)
    if n_agents > 2:
        return _many(dataset, scenario, n_agents)
    words = role_words(dataset)
    if scenario not in SCENARIOS:
        raise InputError("scenario", f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    if scenario == "S1":
        return ROLE_NEUTRAL, ROLE_NEUTRAL
    if scenario == "S2":
        return ROLE_NEUTRAL, words.anchor
    if scenario == "S3a":
        return words.complement
    return words.anchor, words.anchor


def _many(dataset: str, scenario: str, n: int) -> tuple[str, ...]:
    roles = scenario_roles(dataset, scenario)  # checks the names
    if scenario == "S1":
        return (ROLE_NEUTRAL,) * n
    if scenario == "S2":
        return (ROLE_NEUTRAL,) * (n - 1) + (roles[1],)
    if scenario == "S3a":
        return round_robin_roles(dataset, n)
    return (role_words(dataset).anchor,) * n



NEUTRAL, ANCHOR, AREAS = "neutral", "anchor", "areas"
_ANCHOR_LABELS = {"ddxplus8": (4, 6), "medqa-tri": (3,)}  # URTI and GERD; Gastroenterology
_COMPLEMENT_LABELS = {"ddxplus8": ((0, 1, 2, 3), (4, 5, 6, 7)), "medqa-tri": ((0, 3, 4), (1, 2, 5))}


@dataclass(frozen=True)
class Leaning:
    """A role as label indices: ``anchor`` (settles on ``labels``), ``areas`` (sharp on
    ``labels``, unsure about the rest) or ``neutral`` (no labels)."""

    kind: str = NEUTRAL
    labels: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "labels": list(self.labels)}


def scenario_leanings(dataset: str, scenario: str, n_agents: int = 2) -> tuple[Leaning, ...]:
    """The roles of :func:`scenario_roles` as label indices, for members without a prompt."""
    scenario_roles(dataset, scenario, n_agents)  # checks every name
    words = role_words(dataset)
    neutral, anchored = Leaning(), Leaning(ANCHOR, words.anchor_labels)
    if scenario == "S1":
        return (neutral,) * n_agents
    if scenario == "S2":
        return (neutral,) * (n_agents - 1) + (anchored,)
    if scenario == "S3b":
        return (anchored,) * n_agents
    if n_agents == 2:
        return tuple(Leaning(AREAS, labels) for labels in words.complement_labels)
    k = len(words.areas)
    return tuple(Leaning(AREAS, tuple(i for i in range(k) if i % n_agents == a)) if a < k else neutral
                 for a in range(n_agents))
