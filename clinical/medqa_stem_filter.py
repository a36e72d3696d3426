"""Diagnosis-style stem filter for MedQA-Tri (Appendix D.2).

MedQA-Tri keeps only questions that ask *what the patient has or why*: the most likely
diagnosis, cause, etiology, causal organism, underlying condition, or the explanation
of the findings.  Questions about treatment, management, next steps, drugs and their
mechanisms, disease mechanisms, risk, ethics/communication, statistics and work-up
("which test confirms the diagnosis") are rejected.

The filter looks at the *ask sentence* only (the final question of the vignette, see
:func:`ask_sentence`), never at the clinical history, because a vignette's history
mentions treatments and drugs in questions of every kind.

Rules, in order (all case-insensitive, whole-word):

1. Any ``REJECT_PATTERNS`` match -> not diagnosis-style.  Groups:
   treatment/management (``treat*``, ``therapy``, ``manage*``, ``next step``,
   ``most appropriate``, ``prevent*``, ``recommend*``, ``surgery`` ...),
   drugs/pharmacology (``mechanism of action``, ``drug``, ``medication``,
   ``pharmaco*``, ``dose``, ``prescribed``, ``adverse/side effect`` ...),
   mechanisms (``mechanism``, ``pathophysiology``, ``pathogenesis``),
   risk/prognosis (``risk``, ``complication``, ``prognosis``),
   ethics/communication (``ethic*``, ``consent``, ``confidential*``, ``tell``,
   ``respond``/``response``, ``disclose``),
   statistics/study design (``sensitivity``, ``specificity``, ``predictive value``,
   ``odds ratio``, ``bias``, ``study``, ``trial``, ``incidence``, ``prevalence`` ...),
   work-up (``confirm``, ``establish``, ``test``, ``screen*``).
2. Otherwise any ``ACCEPT_PATTERNS`` match -> diagnosis-style:
   ``diagnosis``/``diagnoses``; ``cause``/``caused``/``causing``/``causal``/
   ``causative``; ``etiology``/``etiologic``; ``explain``/``explains``/
   ``explanation``; ``responsible for``; ``due to``; ``account(s) for``;
   ``organism``/``pathogen``/``microorganism``; ``underlying condition|disorder|
   disease``; ``which of the following conditions|disorders|diseases|syndromes``.
3. Otherwise -> not diagnosis-style.
"""
from __future__ import annotations

import re

__all__ = ["ACCEPT_PATTERNS", "REJECT_PATTERNS", "ask_sentence", "is_diagnosis_stem"]

_I = re.IGNORECASE

REJECT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, _I)
    for p in (
        # treatment / management / next step
        r"\b(treat\w*|therap\w*|manag\w*|next (best )?step|(best|first|initial) step"
        r"|most appropriate|intervention|prophyla\w*|prevent\w*|recommend\w*|counsel\w*"
        r"|advise\w*|surgery|surgical|procedure|vaccin\w*|discharge\w*|admission)\b",
        # drugs / pharmacology
        r"\b(mechanism of action|drugs?|medications?|pharmac\w*|doses?|dosage|dosing"
        r"|prescrib\w*|administ\w*|adverse effects?|side effects?|toxicity|antidote"
        r"|inhibitors?|antibiotics?|contracepti\w*|anesthe\w*|chemotherap\w*)\b",
        # risk / prognosis
        r"\b(risks?|complications?|prognos\w*|predispos\w*)\b",
        # ethics / communication
        r"\b(ethic\w*|consent|confidential\w*|disclos\w*|tell|say|respond|response"
        r"|legal\w*|autonomy|surrogate)\b",
        # statistics / study design
        r"\b(sensitivity|specificity|predictive values?|likelihood ratio|odds ratio"
        r"|relative risk|hazard ratio|number needed|incidence|prevalence|p-value"
        r"|confidence interval|bias|stud(y|ies)|trials?|hypothes[ie]s|confound\w*"
        r"|statistic\w*|strata|stratif\w*|standard error|sample size)\b",
        # work-up
        r"\b(confirm\w*|establish\w*|tests?|screen\w*)\b",
    )
)

ACCEPT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, _I)
    for p in (
        r"\bdiagnos[ie]s\b",
        r"\b(cause[sd]?|causing|causal|causative)\b",
        r"\b(etiolog\w*|aetiolog\w*)\b",
        r"\b(explain\w*|explanation)\b",
        r"\bresponsible for\b",
        r"\bdue to\b",
        r"\baccounts? for\b",
        r"\b(organisms?|pathogens?|microorganisms?)\b",
        r"\bunderlying (conditions?|disorders?|diseases?)\b",
        r"\bwhich of the following (conditions|disorders|diseases|syndromes)\b",
        r"\bmost consistent with\b",
        r"\bmost likely (has|have|had|suffers?|suffering)\b",
        r"\b(pathophysiolog\w*|pathogenesis|mechanisms?)\b",
    )
)

_SENTENCE_SPLIT = re.compile(r"(?<=[.?!:])[\"'”’]?\s+(?=[A-Z(\"“])|\n+")
_ASKS = re.compile(r"which of the following|most likely|what is", _I)


def ask_sentence(question: str) -> str:
    """The sentence of a MedQA vignette that asks the question.

    Sentences end at ``.?!:`` followed by a capitalised word, or at a line break (lab
    tables are one value per line).  Returns the last sentence containing ``?``; failing that the last sentence containing
    "which of the following", "most likely" or "what is"; failing that the last one.
    """
    sentences = [s.strip() for s in _SENTENCE_SPLIT.split(question.strip()) if s.strip()]
    if not sentences:
        return ""
    for pick in (lambda s: "?" in s, lambda s: _ASKS.search(s) is not None):
        chosen = [s for s in sentences if pick(s)]
        if chosen:
            return chosen[-1]
    return sentences[-1]


def is_diagnosis_stem(question: str) -> bool:
    """Whether ``question`` (a full vignette or a bare stem) asks for a diagnosis-style
    answer: the most likely diagnosis, cause, etiology, causal organism, underlying
    condition, or what explains the findings.  See the module docstring for the rules."""
    ask = ask_sentence(question)
    if not ask or any(p.search(ask) for p in REJECT_PATTERNS):
        return False
    return any(p.search(ask) for p in ACCEPT_PATTERNS)
