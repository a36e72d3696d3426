"""What each shipped adapter is for: its purpose, the input it expects and where it was
measured, one declarative row per export of ``data/results/training/`` (the Models page
shows the table; ``tests/training/test_adapter_guide.py`` checks that every shipped export
has a row and that every place a row names exists and uses that adapter).

An adapter answers the input it was trained on.  The DDXPlus-8 diagnostician learned from
cases the project renders from DDXPlus's evidence lists (a patient's answers to the
dataset's questions, in a fixed layout), never from prose written by a person: a textbook
description of a myocardial infarction is not such a case, and its answer to one says
little.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DDXPLUS_CASE", "QUESTION", "DEBATE", "VIEW_TURN", "AdapterGuide", "GUIDES", "guide_for", "guide_for_adapter",
           "guide_rows"]

DDXPLUS_CASE = "ddxplus-case"
"""Input: a DDXPlus-8 case as the project renders it from the dataset's evidence list."""
QUESTION = "question"
"""Input: a multiple-choice question with lettered options, prompted as the SAG agent."""
DEBATE = "debate"
"""Input: a question played as a SAG-6 debate through the group file."""
VIEW_TURN = "view-turn"
"""Input: one member's turn in the view group (one view of a DDXPlus-8 case, then the debate)."""

_VIEW_INPUT = ("the group renders it from the dataset's evidence list, nothing else of the case, answered with the "
               "eight diagnoses' letters (`python -m sag ask CASE --group data/groups/ddx-views.json` shows the "
               "turn). Any other input, the whole case or prose, is not what it learned.")
_VIEWS = (("R1", "where the pain is and where it spreads", "pain-location"), ("R2", "the patient's history and risk factors", "history"),
          ("R3", "what the pain is like", "pain-character"))


@dataclass(frozen=True)
class AdapterGuide:
    """One shipped export: the adapters it holds, what they are for, the input they expect
    (``input_kind`` one of :data:`DDXPLUS_CASE`, :data:`QUESTION`, :data:`DEBATE`, and in
    words) and where they were measured: (place in the project, what was measured there)."""

    export: str
    adapters: tuple[str, ...]
    purpose: str
    input_kind: str
    expected_input: str
    measured: tuple[tuple[str, str], ...]


GUIDES: tuple[AdapterGuide, ...] = (
    AdapterGuide(
        "ddxplus8-grpo", ("ddxplus8-grpo",),
        "A DDXPlus-8 diagnostician: picks one of the eight diagnoses, as a D-CEM clinical panel member in "
        "round 1 (neutral role).",
        DDXPLUS_CASE,
        "A DDXPlus-8 case rendered from DDXPlus's evidence list (\"A 55-year-old woman. Presenting complaint: "
        "... Pain: described as ...; intensity 7/10 ...\"), whole or one view of it. Trained on 495 such cases, "
        "never on prose: a case written in your own words is not what it learned.",
        (("data/results/training/ddxplus8-grpo", "200 HELD-OUT DDXPlus-8 cases, before and after training"),
         ("data/results/training/agreement.json", "llama.cpp against torch on the first 12 and 50 held-out cases"),
         ("data/results/dcem_clinical_trio", "the trio panel's third member, reading the symptoms view "
                                             "(S1-S3b, 5 seeds, 100 CAL / 100 TEST cases per cell)"))),
    AdapterGuide(
        "ddxplus8-grpo-balanced", ("ddxplus8-grpo-balanced",),
        "The DDXPlus-8 diagnostician trained again with every diagnosis drawn equally often and the right "
        "letter's log-likelihood beside GRPO: it diagnoses Myocarditis, which the first one never did. The view "
        "group's whole-case reference.",
        DDXPLUS_CASE,
        "A DDXPlus-8 case rendered from DDXPlus's evidence list, as for ddxplus8-grpo; trained on the same 495 "
        "cases, never on prose.",
        (("data/results/training/ddxplus8-grpo-balanced", "200 HELD-OUT DDXPlus-8 cases, before and after "
                                                          "training, every diagnosis's recall"),
         ("data/results/sag_views_references.json", "the view group's reference on the whole case and on each "
                                                    "view (200 TEST cases)"))),
    AdapterGuide(
        "sag-single-grpo", ("sag-single-grpo",),
        "The single SAG agent: answers a multiple-choice question with one option letter. On MedQA, MedMCQA and "
        "PubMedQA it learned to answer A to everything.",
        QUESTION,
        "A question with lettered options, prompted as `python -m sag run --group single` prompts it (MedQA, "
        "MedMCQA, PubMedQA with its abstract, DDXPlus-8 as an eight-option question).",
        (("data/results/training/sag-single-grpo", "200 HELD-OUT items of each of the four benchmarks "
                                                   "(199 of MedQA), before and after training"),
         ("data/results/sag_eval_trained.json", "the SAG evaluation suite with the trained agents"))),
    AdapterGuide(
        "sag6-grpo", ("sag6-grpo-default",),
        "SAG-6 trained with GRPO: one adapter shared by every agent of the group.",
        DEBATE,
        "A question with lettered options, played as a SAG-6 debate through the export's group file "
        "(`python -m sag run --group data/results/training/sag6-grpo/group.json`).",
        (("data/results/sag_runs/sag6-heldout-ddxplus8", "200 held-out DDXPlus-8 items against the untrained group"),
         ("data/results/sag_runs/sag6-heldout-medqa", "200 held-out MedQA items against the untrained group"),
         ("data/results/sag_runs/sag6-heldout-medmcqa", "200 held-out MedMCQA items against the untrained group"),
         ("data/results/sag_runs/sag6-heldout-pubmedqa", "200 held-out PubMedQA items against the untrained group"),
         ("data/results/sag_eval_trained.json", "the SAG evaluation suite with the trained groups"))),
    AdapterGuide(
        "sag6-ctde", ("sag6-ctde-reasoning", "sag6-ctde-knowledge", "sag6-ctde-safety", "sag6-ctde-judge"),
        "SAG-6 trained with CTDE: one adapter per role (reasoning, knowledge, safety, judge) and a central critic.",
        DEBATE,
        "A question with lettered options, played as a SAG-6 debate through the export's group file, which gives "
        "each role its adapter (`python -m sag run --group data/results/training/sag6-ctde/group.json`).",
        (("data/results/sag_runs/sag6-heldout-ddxplus8", "200 held-out DDXPlus-8 items against the untrained group"),
         ("data/results/sag_runs/sag6-heldout-medqa", "200 held-out MedQA items against the untrained group"),
         ("data/results/sag_runs/sag6-heldout-medmcqa", "200 held-out MedMCQA items against the untrained group"),
         ("data/results/sag_runs/sag6-heldout-pubmedqa", "200 held-out PubMedQA items against the untrained group"),
         ("data/results/sag_eval_trained.json", "the SAG evaluation suite with the trained groups"))),
    *(AdapterGuide(
        f"ddx-views-{agent.lower()}", (f"ddx-views-{agent.lower()}",),
        f"Member {agent} of the view group, trained alone on its view ({view}: {reads}) before the debate stage: "
        "picks one of the eight DDXPlus-8 diagnoses. The shipped group runs the debate stage's adapters; this one "
        "is the record of the first stage.",
        VIEW_TURN, f"Member {agent}'s first turn in the view group (`data/groups/ddx-views.json`): {reads} ({view}) "
                   f"of a DDXPlus-8 case as {_VIEW_INPUT}",
        ((f"data/results/training/ddx-views-{agent.lower()}", "the 198 cases of the debate fold (TRAIN cases this "
                                                               "stage never trained on), before and after training, "
                                                               "recall per diagnosis"),))
      for agent, reads, view in _VIEWS),
    *(AdapterGuide(
        f"ddx-views2-{agent.lower()}", (f"ddx-views2-{agent.lower()}",),
        f"Member {agent} of the view group's second training, alone on its view ({view}: {reads}), trained with "
        "GRPO and the log-likelihood term (`--supervised 1`) so that no diagnosis is left out: picks one of the "
        "eight DDXPlus-8 diagnoses. The start of the second debate stage (`data/groups/ddx-views2-members.json`); "
        "the shipped group still runs the first training's members.",
        VIEW_TURN, f"Member {agent}'s first turn in the view group (`data/groups/ddx-views.json`): {reads} ({view}) "
                   f"of a DDXPlus-8 case as {_VIEW_INPUT}",
        ((f"data/results/training/ddx-views2-{agent.lower()}", "the 198 cases of the debate fold (TRAIN cases this "
                                                                "stage never trained on), before and after training, "
                                                                "recall per diagnosis"),))
      for agent, reads, view in _VIEWS),
    AdapterGuide(
        "ddx-views-debate", ("ddx-views-debate-R1", "ddx-views-debate-R2", "ddx-views-debate-R3"),
        "The view group's three members after the debate stage (CTDE): each reads its own view and answers, then "
        "reads the others' answers and answers again. The shipped view group runs these members.",
        VIEW_TURN, "Each member's turns in the view group (`data/groups/ddx-views-trained.json`, or this export's "
                   f"group file): its view of a DDXPlus-8 case as {_VIEW_INPUT}",
        (("data/results/training/ddx-views-debate", "the 130 CAL cases: each member's answer after reading the "
                                                    "others, before and after the debate stage"),)),
    AdapterGuide(
        "ddx-views2-debate", ("ddx-views2-debate-R1", "ddx-views2-debate-R2", "ddx-views2-debate-R3"),
        "The view group's three members after the second training's debate stage (CTDE, from `ddx-views2-r1`, "
        "`-r2`, `-r3`): each reads its own view and answers, then reads the others' answers and answers again.",
        VIEW_TURN, "Each member's turns in the view group (this export's group file): its view of a DDXPlus-8 "
                   f"case as {_VIEW_INPUT}",
        (("data/results/training/ddx-views2-debate", "the 130 CAL cases: each member's answer after reading the "
                                                     "others, before and after the debate stage, recall per "
                                                     "diagnosis"),)),
    AdapterGuide(
        "ddx-views-judge", ("ddx-views-judge",),
        "The view group's judge (J1): reads the debate, not the case (each member's view name, its answers in "
        "both rounds with two runner-up letters, and the safety agent's audit), and answers for the group with one "
        "of the eight DDXPlus-8 diagnoses or REFUSE.",
        VIEW_TURN, "The judge's turn in the view group (`data/groups/ddx-views-trained.json`) after the debate "
                   "stage's members have played round 0 and round 1 of a DDXPlus-8 case",
        (("data/results/training/ddx-views-judge", "the 130 CAL cases: the judge's answer before and after its "
                                                   "stage, recall per diagnosis"),)),
    AdapterGuide(
        "ddx-views2-judge", ("ddx-views2-judge",),
        "The second training's judge: reads the debate of the second training's members (`ddx-views2-debate-R1`, "
        "`-R2`, `-R3`), not the case, and answers for the group with one of the eight DDXPlus-8 diagnoses or "
        "REFUSE; trained with GRPO and the log-likelihood term (`--supervised 1`).",
        VIEW_TURN, "The judge's turn in the view group (`data/groups/ddx-views2-trained.json`) after the second "
                   "training's members have played round 0 and round 1 of a DDXPlus-8 case",
        (("data/results/training/ddx-views2-judge", "the 130 CAL cases: the judge's answer before and after its "
                                                    "stage, recall per diagnosis"),)),
)


def guide_for(export: str) -> AdapterGuide | None:
    """The row of a shipped export, by its name."""
    return next((g for g in GUIDES if g.export == export), None)


def guide_for_adapter(adapter: str) -> AdapterGuide | None:
    """The row of the export holding the shipped adapter ``adapter`` (as named in a model
    key's ``+lora:NAME``)."""
    return next((g for g in GUIDES if adapter in g.adapters), None)


def guide_rows(exports: list[str]) -> list[dict[str, str]]:
    """One row per shipped export, in words, for a table: the guide's row, or a row saying
    that none is written for an export without one."""
    rows = []
    for name in exports:
        g = guide_for(name)
        if g is None:
            rows.append({"Shipped export": name, "Adapters": "", "For": "no description written for this export",
                         "Expects": "", "Measured in": ""})
            continue
        rows.append({"Shipped export": name, "Adapters": ", ".join(g.adapters), "For": g.purpose,
                     "Expects": g.expected_input,
                     "Measured in": "; ".join(f"{place} ({what})" for place, what in g.measured)})
    return rows
