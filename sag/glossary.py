"""Glossary terms of the Small Agent Group pages: the roles and the clinical-utility
measures of the group evaluation (the Glossary page shows them as their own group)."""
from __future__ import annotations

from dcem.analysis.glossary import Term

__all__ = ["SAG_TERMS"]

SAG_TERMS: dict[str, Term] = {
    "A_R": Term("Reasoning agent A_R", "Reads the question and argues for an option; in later rounds it answers "
                "the other agents' arguments."),
    "A_K": Term("Knowledge agent A_K", "Searches a medical text collection (BM25) and argues from the passages it "
                "found, citing them."),
    "A_S": Term("Safety agent A_S", "Audits the round's answers and raises a flag on an unsafe or unsupported "
                "claim; it can ask for the item to go to a human."),
    "A_J": Term("Judge A_J", "Reads the debate and the safety flags and gives the group's answer, saying whether "
                "the round brought anything new."),
    "flag": Term("Safety flag (FLAG)", "A line a safety agent starts with FLAG: to mark an unsafe or unsupported "
                 "claim in the round; the judge reads it."),
    "new_mark": Term("NEW mark", "A judge ends its reply with NEW: yes or NEW: no, saying whether the round "
                     "brought new substance; the pages show \"not stated\" when it gave neither."),
    "grpo": Term("GRPO", "Group relative policy optimisation: a model answers each training question several "
                 "times and is pushed toward the answers that score above the group's mean reward (no value "
                 "model)."),
    "ctde": Term("CTDE", "Centralised training, decentralised execution: the agents of a group are trained "
                 "together on the group's outcome, then each answers on its own."),
    "ppo_dpo": Term("PPO and DPO", "Two other ways of training a model from rewards or preferences (proximal "
                    "policy optimisation; direct preference optimisation) that the SAG paper compares; this "
                    "project does not run them."),
    "rss": Term("Peak RSS", "Resident set size: the most memory the process held while running, in MB."),
    "tf_idf": Term("TF-IDF screen", "The learned screen of the safety tab: word 1-2 grams weighted by TF-IDF and "
                   "a logistic regression trained on separate requests, shown as a reference."),
    "gap": Term("Gap", "A group's best benchmark accuracy minus its worst, in points: how unevenly it does."),
    "supported": Term("Supported", "On PubMedQA with its abstract: the answer is right and the deciding rationale "
                      "uses at least three content words of the abstract that the question does not contain."),
    "grounded": Term("Grounded", "The second condition of Supported alone: the rationale draws on the abstract, "
                     "right answer or not."),
    "bleu4": Term("BLEU-4", "Overlap of word sequences (up to four words) between the deciding rationale and "
                  "PubMedQA's long answer, from 0 (none) to 100 (the same text)."),
    "cdr": Term("CDR (counterfactual divergence rate)", "Share of vignette pairs, identical but for the patient's "
                "stated gender (or race), that the group answers differently; lower is fairer, unless the group "
                "gives one answer to everything."),
    "hrr": Term("HRR (harmful refusal rate)", "Share of harmful requests the group declines (answers B or "
                "REFUSE); read it beside the over-refusal of benign requests."),
    "over_refusal": Term("Over-refusal", "Share of benign requests the group declines: the price of a high HRR."),
    "roc_auc": Term("ROC AUC", "Area under the curve of harmful refused against benign refused as a threshold on "
                    "the refusal score moves: 0.5 is no separation, 1 a perfect one."),
    "cr": Term("CR (consensus rate)", "Mean share of repeated runs that give an item its most frequent answer: 1 "
               "when every run agrees, which a group answering one letter to everything also reaches."),
    "best_single_letter": Term("Best single letter", "The accuracy of answering the same option to every item: what "
                               "a group that reads nothing can reach."),
    "most_frequent_answer": Term("Most frequent answer", "The answer a group gave most often and its share; "
                                 "flagged when it is more than half, because then the group's numbers describe that "
                                 "letter, not its reading."),
}
