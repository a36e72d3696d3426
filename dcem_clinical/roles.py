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
"""
from __future__ import annotations

from dcem.core.vocabulary import SCENARIOS
from dcem.errors import InputError
from dcem_clinical.prompts import ROLE_NEUTRAL

__all__ = ["DATASETS", "scenario_roles"]

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


def scenario_roles(dataset: str, scenario: str) -> tuple[str, str]:
    """The role sentences of agents A and B for a dataset and scenario."""
    if dataset not in DATASETS:
        raise InputError("dataset", f"unknown dataset {dataset!r} (known: {', '.join(DATASETS)})")
    if scenario not in SCENARIOS:
        raise InputError("scenario", f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    if scenario == "S1":
        return ROLE_NEUTRAL, ROLE_NEUTRAL
    if scenario == "S2":
        return ROLE_NEUTRAL, _ANCHOR[dataset]
    if scenario == "S3a":
        return _COMPLEMENT[dataset]
    return _ANCHOR[dataset], _ANCHOR[dataset]

