"""Plain-language names and one-line definitions of the metrics, parameters and outcomes
the dashboard shows (the glossary, table headers and tooltips read them from here).

Definitions follow the policy contract (:mod:`dcem.core.policy`), the energy
(:mod:`dcem.core.energy`) and the Appendix E metrics (:mod:`dcem.core.metrics`).
"""
from __future__ import annotations

from typing import NamedTuple

from dcem.analysis.charged_risk import CHARGED, SYSTEM_WORDS, charged_words

__all__ = ["Term", "METRICS", "PARAMETERS", "CONCEPTS", "GLOSSARY", "RATE_METRICS", "metric_words",
           "term_help"]


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
