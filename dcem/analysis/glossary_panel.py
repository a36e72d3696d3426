"""Glossary terms of a deliberation that are neither metrics nor parameters: the pooled
belief and its decisions, how an agent is read and challenged, the methods compared, the
words the pages use for chance and calibration, and the scenarios, the statistical
members' settings and the guarantee's inputs (the Glossary page shows them as their own
groups)."""
from __future__ import annotations

from dcem.analysis.glossary import Term

__all__ = ["ACTION_TERMS", "PANEL_TERMS", "METHOD_TERMS", "RUN_TERMS"]

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
