"""The dashboard's one glossary, for the D-CEM pages and the Small Agent Group pages alike:
plain-language names and one-line definitions of the metrics, parameters and outcomes the
pages show (table headers and tooltips read them from here) and the groups the Glossary page
and the Overview show (:data:`GLOSSARY_GROUPS`).

Definitions follow the policy contract (:mod:`dcem.core.policy`), the energy
(:mod:`dcem.core.energy`) and the Appendix E metrics (:mod:`dcem.core.metrics`); the Small
Agent Group's terms follow :mod:`sag` and its evaluation (:mod:`sag.evaluation`).
"""
from __future__ import annotations

from typing import NamedTuple

from dcem.analysis.charged_risk import CHARGED, SYSTEM_WORDS, charged_words

__all__ = ["Term", "METRICS", "PARAMETERS", "CONCEPTS", "GLOSSARY", "RATE_METRICS", "metric_words",
           "term_help", "ACTION_TERMS", "PANEL_TERMS", "METHOD_TERMS", "RUN_TERMS", "SAG_TERMS", "GLOSSARY_GROUPS"]


class Term(NamedTuple):
    words: str  # a short name in words, for a table header
    help: str  # one or two sentences, for a tooltip or the glossary


METRICS: dict[str, Term] = {
    "risk": Term("Expected loss", "Mean loss L(d, y) of the final decision d against the true label y, "
                 "escalated cases included."),
    "system_risk": Term(SYSTEM_WORDS, "Mean loss of the cases the system decided itself, over all cases: an "
                        "escalated case counts 0, as if the person who takes it over cost nothing."),
    CHARGED: Term(charged_words(), "System risk with every escalated case charged the cost of an escalation "
                  "instead of 0: the mean of the loss of each decided case and the escalation cost of each escalated "
                  "one, in the loss's units. The cost is stated in the column's name (0.5 unless set otherwise, the "
                  "cost the thresholds are fitted with); a method that never escalates has the same value as its "
                  "system risk."),
    "accuracy": Term("Accuracy", "Share of cases whose final pooled decision equals the true label."),
    "high_risk_miss": Term("High-risk miss rate", "Among cases whose true label is a high-risk class, the share "
                           "whose final decision is wrong."),
    "harmful_consensus": Term("Harmful consensus", "Share of cases the system decided (not escalated) wrongly "
                              "while the true label was a high-risk class: the error D-CEM exists to prevent."),
    "certified_rate": Term("Certified", "Share of cases certified: stopped with a decision because the energy "
                           "was at most eps_safe and the margin at least m_safe. A decision forced by the round "
                           "budget is not counted; 'Decided' counts it."),
    "decided_rate": Term("Decided", "Share of cases that ended with a decision, certified or forced by the round "
                         "budget: the seed's 'Certified' rate of App. E (1[u = DEC]). Decided + escalated = 1 "
                         "for D-CEM."),
    "escalation_rate": Term("Escalated", "Share of cases handed to a human (STOP_AND_ESCALATE)."),
    "avg_rounds": Term("Mean rounds", "Mean number of deliberation rounds before the episode ended."),
    "parse_error_rate": Term("Unusable answers", "Share of the language-model agents' answers that could not be "
                             "read (or calls that failed); such an answer counts as a uniform vote."),
    "mix_continue": Term("Rounds: continue", "Share of the mediator's actions over all played rounds that were "
                         "CONTINUE."),
    "mix_steer": Term("Rounds: challenge", "Share of the mediator's actions over all played rounds that were a "
                      "challenge (DIFFERENTIAL_STEER)."),
    "mix_decide": Term("Rounds: decide", "Share of the mediator's actions over all played rounds that were "
                       "STOP_AND_DECIDE."),
    "mix_escalate": Term("Rounds: escalate", "Share of the mediator's actions over all played rounds that were "
                         "STOP_AND_ESCALATE."),
}

PARAMETERS: dict[str, Term] = {
    "eps_safe": Term("Certification threshold eps_safe", "A decision may be certified only when the energy is "
                     "at or below eps_safe (and the margin at least m_safe)."),
    "eps_low": Term("Stagnation threshold eps_low", "Above eps_low, a deliberation whose energy no longer falls "
                    "by delta per round is escalated; at the round budget, a case above eps_low is escalated."),
    "m_safe": Term("Margin threshold m_safe", "Minimum risk margin between the best and the runner-up decision "
                   "for a certification."),
    "delta": Term("Required descent delta", "The energy must fall by at least delta per round (averaged over the "
                  "window W) or, above eps_low, the case is escalated."),
    "window": Term("Window W", "Number of rounds over which the energy descent is averaged."),
    "s_asym": Term("Challenge gate s_asym", "An agent is challenged on its dangerous alternative when its gate "
                   "value (its own risk, or the reliability gap) reaches s_asym."),
    "t_max": Term("Round budget t_max", "The last round: an unfinished case is decided there (energy at most "
                  "eps_low) or escalated."),
    "alpha": Term("Disagreement weight alpha", "Weight of the agents' posterior disagreement in the energy."),
    "beta": Term("Risk weight beta", "Weight of the agents' expected risk in the energy."),
    "gamma": Term("Margin weight gamma", "Weight of the margin term gamma * exp(-margin) in the energy."),
    "lambda_pool": Term("Pooling exponent lambda", "Exponent on each agent's reliability in its pooling weight."),
    "rho_min": Term("Reliability floor rho_min", "Smallest reliability an agent is given before pooling."),
    "omega_min": Term("Weight clip omega_min", "Each pooling weight is kept within [omega_min, 1 - omega_min]."),
    "steer_gate": Term("Steer gate", "Which agent a challenge targets: the one with the largest own risk, or the "
                       "least reliable one when reliabilities differ enough."),
    "l_high": Term("High-risk loss l_high", "Loss of missing a high-risk class in the three-level loss "
                   "{0, 1, l_high}."),
}

CONCEPTS: dict[str, Term] = {
    "energy": Term("Energy", "The mediator's diagnostic-risk energy: weighted disagreement between the agents' "
                   "posteriors, plus their expected risk, plus gamma * exp(-margin). Low energy means the panel "
                   "agrees on a low-risk decision."),
    "margin": Term("Margin", "How much lower the expected loss of the best decision is than that of the runner-up."),
    "descent": Term("Descent", "How much the energy fell per round, averaged over the last W rounds."),
    "certified": Term("Certified", "STOP_AND_DECIDE with energy at most eps_safe and margin at least m_safe; a "
                      "decision at the round budget is a decision, not a certification."),
    "escalated": Term("Escalated", "STOP_AND_ESCALATE: the system makes no decision and hands the case to a "
                      "human reviewer."),
    "challenge": Term("Challenge", "DIFFERENTIAL_STEER: one agent is asked to weigh a dangerous alternative it "
                      "is likely to miss."),
    "loss_matrix": Term("Loss matrix", "L[d, y]: the cost of deciding d when the truth is y; the high-risk "
                        "classes are those whose miss costs l_high."),
    "high_risk": Term("High-risk class", "A class whose miss is costly (loss l_high); harmful consensus counts "
                      "misses of these classes."),
    "risk_control": Term("Thresholds with a guarantee (Learn-then-Test)", "Instead of thresholds that do well "
                         "on average, the mediator may decide only below an energy level chosen by a statistical "
                         "test on labelled calibration cases. The promise: except with the chance the bound fails "
                         "(delta), over which calibration cases were drawn, the chosen rate (harmful consensus, "
                         "harmful consensus among decided cases, or system risk) on new cases like them is at most "
                         "the rate bound (alpha). These are not the mediator's own alpha (a weight in the energy) "
                         "and delta (the required descent). Among the levels that pass, the one that decides most "
                         "is used; when none passes, every case is escalated. The promise is per cell (one panel on one "
                         "kind of case, over random draws of its calibration cases), not a share pooled over cells, "
                         "and a cell where no level passes shows a rate of 0 only because it decides nothing. It "
                         "promises nothing about one case, "
                         "and nothing when the cases, the agents or their prompts change from those the calibration "
                         "saw."),
    "label_free": Term("Confusions without labels (Dawid-Skene)", "When cases have no true label, each agent's "
                       "confusion matrix and the class prior can be estimated from the agents' reports alone: an "
                       "iterative fit (expectation-maximisation) treats each case's truth as hidden and assumes the agents err independently given it. The "
                       "full model needs at least three agents; the one-coin model gives each agent one accuracy. With "
                       "two agents the reports cannot tell which one is right when they disagree, so at least six "
                       "labelled cases on which exactly one of them is right, all for the same agent, are needed. "
                       "Labelled cases, a few reviewed escalations for instance, are fixed to their truth. The estimate "
                       "can come out with its classes permuted, rank the agents against the labelled cases or their "
                       "agreement with each other, or fail when agents err together; such estimates are refused. In "
                       "this project's measurements labels never stopped mattering: the mediator's system risk was "
                       "higher with estimated matrices than with counted ones."),
}

GLOSSARY: dict[str, Term] = {**CONCEPTS, **METRICS, **PARAMETERS}

RATE_METRICS = ("accuracy", "high_risk_miss", "harmful_consensus", "certified_rate", "escalation_rate",
                "decided_rate")


def metric_words(name: str, *, escalation_cost: float | None = None) -> str:
    """The metric's name in words (the name itself when it has no entry); the charged risk's
    with ``escalation_cost`` (default 0.5) in it."""
    if name == CHARGED and escalation_cost is not None:
        return charged_words(escalation_cost)
    term = GLOSSARY.get(name)
    return term.words if term else name


def term_help(name: str) -> str | None:
    """The tooltip of a metric, parameter or concept, or None."""
    term = GLOSSARY.get(name)
    return term.help if term else None


# Terms of a deliberation that are neither metrics nor parameters: the pooled belief and its
# decisions, how an agent is read and challenged, the methods compared, the words the pages
# use for chance and calibration, and the scenarios, the statistical members' settings and
# the guarantee's inputs (the Glossary page shows them as their own groups).
ACTION_TERMS: dict[str, Term] = {
    "CONTINUE": Term("Continue (CONTINUE)", "The mediator's action when nothing decides the case yet: another round "
                     "of reports."),
    "DIFFERENTIAL_STEER": Term("Challenge (DIFFERENTIAL_STEER)", "The mediator asks one agent to weigh a dangerous "
                               "alternative it is likely to miss; the case goes on."),
    "STOP_AND_DECIDE": Term("Decide (STOP_AND_DECIDE)", "The case ends with the Bayes decision: certified (energy "
                            "at most eps_safe, margin at least m_safe) or, at the round budget, decided because the "
                            "energy is at most eps_low. The pages say \"certified decision\" or \"decision at the "
                            "round budget\"."),
    "STOP_AND_ESCALATE": Term("Escalate (STOP_AND_ESCALATE)", "The system makes no decision and hands the case to a "
                              "human reviewer. The pages say \"escalated to a human\"."),
}

PANEL_TERMS: dict[str, Term] = {
    "pooled_q": Term("Pooled Q", "The panel's pooled belief over the classes: each agent's posterior raised to its "
                     "pooling weight, multiplied together and normalised (a weighted log pool)."),
    "bayes_decision": Term("Bayes decision", "The class d whose expected loss under the pooled Q, the sum over y of "
                           "L[d, y] Q(y), is the lowest: what the panel would decide now."),
    "runner_up": Term("Runner-up", "The class with the second-lowest expected loss; the margin is how much more it "
                      "costs than the Bayes decision."),
    "dangerous_miss": Term("Dangerous plausible miss", "For one agent: the high-risk class it gives some "
                           "probability but would not decide, whose miss would cost most; a challenge asks the agent "
                           "to weigh it."),
    "cues": Term("Cues S(t)", "The evidence an agent has been shown up to round t: the findings of the case its "
                 "view lets it read, revealed a few per round in the dialogue of statistical members."),
    "compliance": Term("Compliance xi", "How far a challenged agent follows the challenge: with probability xi it "
                       "adopts the suggested alternative (eq. 21), or it blends its belief toward it by xi (eq. 19)."),
    "splits": Term("CAL and TEST splits", "A run's cases are split in two: CAL, labelled cases its confusion "
                   "matrices and thresholds are fitted on, and TEST, the cases every metric is measured on."),
    "cal_accuracy": Term("CAL accuracy", "An agent's accuracy on the calibration split (CAL), the labelled cases its "
                         "confusion matrix is estimated from; the TEST cases are scored separately."),
    "chance_level": Term("Chance level", "What guessing scores: 1 / number of classes (or options). An accuracy "
                         "within noise of it means the agent's answers carry next to no information."),
    "sharpened_world": Term("Sharpened world", "The synthetic agents sample their report from p ∝ exp(3 s) instead "
                            "of the specification's p ∝ exp(s): more accurate agents, closer to the paper's Table 5."),
    "view": Term("View", "The part of a clinical case a panel member reads (the complaint, the history, the "
                 "symptoms, or the whole case); members with different views disagree for real reasons."),
}

METHOD_TERMS: dict[str, Term] = {
    "single": Term("Single best", "The agent with the best calibration accuracy decides alone, from its first "
                   "report; no discussion and no escalation."),
    "free": Term("Free discussion", "The agents talk for a fixed number of rounds with no mediator; the Bayes "
                 "decision of the last round's pooled Q decides; no escalation."),
    "pool": Term("Fixed log pool", "The first round's reports, pooled with weights fixed from each agent's "
                 "calibration accuracy, decide by their Bayes decision; no discussion and no escalation."),
    "dcem": Term("D-CEM", "The mediator: it continues, challenges an agent, certifies a low-risk decision or "
                 "escalates the case to a human, round by round, from the energy and the margin."),
    "dcem_noesc": Term("D-CEM without escalation", "The same mediator with STOP_AND_ESCALATE switched off: at the "
                       "round budget it decides whatever the energy; it shows what escalation buys."),
}

RUN_TERMS: dict[str, Term] = {
    "S1": Term("S1 (ideal)", "Both agents reliable: two well-informed rule agents in the synthetic world, two neutral "
               "clinicians in the clinical runs."),
    "S2": Term("S2 (asymmetric)", "One reliable agent and one weak one: in the clinical runs the second carries the "
               "dataset's default-label anchor (DDXPlus-8: URTI or GERD), so it misses high-risk cases "
               "systematically."),
    "S3a": Term("S3a (noisy, complementary)", "Both agents unreliable, each sharp on a different part of the labels, "
                "so their errors partly offset."),
    "S3b": Term("S3b (noisy, not complementary)", "Both agents unreliable with the same bias (S2's anchor in both), "
                "so their errors add up instead of offsetting."),
    "anchor": Term("Anchor (statistical member)", "How strongly an anchored statistical member (S2's second agent, "
                   "every S3b agent) favours its anchor labels: the amount added to their score on the log scale. At "
                   "3.0 an anchor label loses only when its odds against the member's own top answer are below 1 : 20."),
    "kappa": Term("Peer weight kappa (statistical member)", "How much a statistical member hears its peers: each "
                  "peer's previous answer adds kappa / (number of agents - 1) to that label's score on the log scale; "
                  "at 1.0 one peer weighs about as much as a factor e in the member's own odds."),
    "ex_post": Term("Ex post", "Computed afterwards from the evaluated (TEST) cases and their true labels, to look "
                    "at: not what the mediator knew, nor the calibration data the run was fitted on."),
    "rate_bound": Term("Rate bound", "Learn-then-Test's promised ceiling on the controlled rate (alpha in the "
                       "method's papers and on the command line): a share of cases in percent, or a mean loss for "
                       "the system risk."),
    "bound_fails": Term("Chance the bound fails", "How often, over the draw of the calibration cases, Learn-then-Test's "
                        "promise may fail (delta in the method's papers and on the command line); 10 % promises the "
                        "bound with probability 90 %."),
    "fixed_sequence": Term("Fixed sequence (multiple testing)", "Learn-then-Test tests the energy levels from the "
                           "strictest up, each at the full chance the bound fails, and stops at the first that fails; "
                           "the most powerful choice when the rate grows with the level."),
    "bonferroni": Term("Bonferroni (multiple testing)", "Learn-then-Test tests every energy level at the chance the "
                       "bound fails divided by the number of levels; a rate among decided cases, which need not grow "
                       "with the level, takes it."),
}


# The Small Agent Group pages' terms: the roles and the clinical-utility measures of the
# group evaluation (the Glossary page shows them as their own group).
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


GLOSSARY_GROUPS: tuple[tuple[str, dict[str, Term]], ...] = (
    ("Concepts", CONCEPTS), ("Metrics", METRICS), ("Parameters", PARAMETERS),
    ("Mediator actions", ACTION_TERMS), ("Decisions, agents and chance", PANEL_TERMS), ("Methods compared", METHOD_TERMS),
    ("Scenarios, statistical members and the guarantee", RUN_TERMS), ("Small Agent Group and its evaluation", SAG_TERMS))
"""Every group of terms in the order the Glossary page shows them (the Overview shows the first two)."""
