"""The statistical panel member: a non-LLM classifier that answers like an LLM agent.

A member key ``stat`` names the dataset's default kind (DDXPlus-8: ``nb-evidence``, naive
Bayes over the patient's evidence codes; MedQA-Tri: ``tfidf-lr``, TF-IDF of the question
text and a logistic regression); ``stat:KIND`` names one kind of
:data:`dcem_clinical.stat_model.STAT_KINDS`; a suffix ``@VIEW`` (``stat@history``,
``stat:lr-evidence@complaint``) lets it read only part of each case
(:mod:`dcem_clinical.stat_views`).  In a cell the member is fit on the seed's CAL cases
only (:func:`fit_stat_agent`); it answers CAL cases with its out-of-fold vectors and every
other case with the model fit on all of CAL.

With a :class:`~dcem_clinical.stat_dialogue.StatDialogue` the member takes its scenario
role, hears its peers' previous answers and answers a challenge
(:mod:`dcem_clinical.stat_dialogue`); without one (``fixed``, the shipped runs before
views existed) it always gives its classifier's answer.  Each turn goes through the same
call log as an LLM turn (backend ``stat``, model ``stat:KIND``, model sha256 = the fit's
sha256, the message = the document the model read; the key also holds the role, the
peers' answers and the challenge adjustment when there are any), so the walkthrough and
the store see it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from clinical.datasets import ClinicalCase, ClinicalDataset, is_file_dataset
from common.db import Database
from common.errors import ConfigError, InputError
from dcem_clinical.agent import AgentReport
from dcem_clinical.roles import Leaning
from dcem_clinical.stat_dialogue import (StatDialogue, answer_vector, challenge_shift, fit_temperature,
                                         leaned_scores, tempered)
from dcem_clinical.stat_model import STAT_KINDS, FittedStat, distinguishing_features, fit_stat_model
from dcem_clinical.stat_views import (ALL, VIEWS, ddxplus_cases, evidence_view, feature_words, split_view,
                                      view_text)
from runtime.call_log import CallContext, CallLog, CallRecord, cache_key
from runtime.messages import Message, Role

__all__ = ["STAT_BACKEND", "DEFAULT_KIND", "StatMember", "StatAgent", "StatTurn", "is_stat_key", "stat_member",
           "stat_key_help", "case_documents", "fit_stat_agent"]

STAT_BACKEND = "stat"
DEFAULT_KIND = {"ddxplus8": "nb-evidence", "medqa-tri": "tfidf-lr"}


def stat_key_help() -> str:
    """The statistical member keys, for error messages and help text."""
    kinds = ", ".join(f"stat:{k} ({' or '.join(d)})" for k, d in STAT_KINDS.items())
    views = "; ".join(f"{d} {', '.join(v)}" for d, v in VIEWS.items())
    return (f"stat (the dataset's default: {', '.join(f'{d} {k}' for d, k in DEFAULT_KIND.items())}, a case file "
            f"tfidf-lr), {kinds}, stat:tfidf-lr (a case file); add @VIEW to read part of a case ({views}; a case "
            "file: its own views)")


def is_stat_key(key: str) -> bool:
    """Whether a member key names a statistical agent (``stat``, ``stat:...``, ``stat@...``)."""
    key = key.strip().partition("@")[0].strip()
    return key == STAT_BACKEND or key.startswith(STAT_BACKEND + ":")


@dataclass(frozen=True)
class StatMember:
    """An unfitted statistical panel member: its kind and view (fit per cell on that cell's CAL)."""

    kind: str
    view: str = ALL

    @property
    def key(self) -> str:
        return f"{STAT_BACKEND}:{self.kind}" + (f"@{self.view}" if self.view != ALL else "")


def stat_member(key: str, dataset: str) -> StatMember:
    """The member a ``stat[:KIND][@VIEW]`` key names for ``dataset``; ConfigError otherwise."""
    key, view = split_view(key, dataset)
    kind = DEFAULT_KIND.get(dataset, "tfidf-lr") if key == STAT_BACKEND else key.partition(":")[2].strip()
    if kind not in STAT_KINDS:
        raise ConfigError("agents", f"unknown statistical agent {key!r}; valid: {stat_key_help()}")
    if dataset not in STAT_KINDS[kind] and not (kind == "tfidf-lr" and is_file_dataset(dataset)):
        raise ConfigError("agents", f"{key!r} cannot read {dataset} cases; valid: {stat_key_help()}")
    if kind == "tfidf-lr" and dataset == "ddxplus8" and view != ALL:
        raise ConfigError("agents", f"{key}@{view}: the text model reads the whole DDXPlus case; give a view to an "
                                    "evidence model (stat:nb-evidence@VIEW or stat:lr-evidence@VIEW)")
    return StatMember(kind, view)


@lru_cache(maxsize=8)
def _evidence_documents(view: str = ALL) -> Mapping[str, str]:
    return {case_id: _evidence_document(evidence_view(view, c.evidences, c.initial_evidence))
            for case_id, c in ddxplus_cases().items()}


def _evidence_document(evidences: Sequence[str]) -> str:
    """Evidence codes as tokens: each code, and the question of a multi-valued answer."""
    tokens: list[str] = []
    for code in evidences:
        tokens.append(code)
        if "_@_" in code:
            tokens.append(code.split("_@_", 1)[0])
    return " ".join(tokens)


def case_documents(kind: str, cases: Sequence[ClinicalCase], view: str = ALL) -> list[str]:
    """The document each case gives a statistical model of ``kind`` (codes or case text),
    reading only ``view`` of it (:mod:`dcem_clinical.stat_views`)."""
    if kind == "tfidf-lr":
        return [view_text(view, c) for c in cases]
    table = _evidence_documents(view)
    missing = [c.source_id for c in cases if c.source_id not in table]
    if missing:
        raise InputError("cases", f"no DDXPlus evidence codes for case {missing[0]!r}")
    return [table[c.source_id] for c in cases]


@dataclass(frozen=True)
class StatTurn:
    """What a responsive member hears in one turn: the other members' answers of the
    previous round (label indices; none in round 1) and its challenge adjustment (K,)."""

    peers: tuple[int, ...] = ()
    adjust: tuple[float, ...] = ()


class StatAgent:
    """A fitted statistical member with the panel's agent interface (classify, cues, info).

    documents : panel case id -> the document it reads; oof : panel case id of a CAL case
    -> its row in ``fitted.oof`` (its out-of-fold vector); leaning / dialogue / n_agents :
    its role, how it hears peers and challenges (None: it always gives its classifier's
    answer) and the panel's size.  The panel keeps each case's dialogue state and passes
    it in (:class:`StatTurn`), since several panels (one per method) share the member.
    """

    def __init__(self, fitted: FittedStat, labels: Sequence[str], store: Database, *, name: str, role: str,
                 documents: Mapping[str, str], oof: Mapping[str, int], view: str = ALL,
                 leaning: Leaning = Leaning(), dialogue: StatDialogue | None = None, n_agents: int = 2) -> None:
        self.fitted, self.labels, self.name, self.role = fitted, tuple(labels), name, role
        self.documents, self.oof, self.view = dict(documents), dict(oof), view
        self.leaning, self.dialogue, self.n_agents = leaning, dialogue, n_agents
        self.temperature = 1.0  # set by fit_stat_agent when the dialogue calibrates
        self.log = CallLog(store)
        self.last_key: str | None = None

    @property
    def model_id(self) -> str:
        return f"{STAT_BACKEND}:{self.fitted.kind}"

    @property
    def responsive(self) -> bool:
        """Whether the member takes its role and answers peers and challenges."""
        return self.dialogue is not None

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "model": self.model_id, "backend": STAT_BACKEND,
                               "model_sha256": self.fitted.fit_sha256, "fit_cases": len(self.fitted.fit_ids),
                               "cal_oof_accuracy": self.fitted.oof_accuracy}
        if self.view != ALL:
            out["view"] = self.view
        if self.dialogue is not None:
            out["leaning"], out["dialogue"] = self.leaning.to_dict(), self.dialogue.to_dict()
            out["temperature"] = self.temperature
        return out

    def _vector(self, case_id: str | None) -> tuple[str, np.ndarray, str, int | None]:
        """(document, probability vector, source, CAL row or None) of a panel case."""
        if case_id is None or case_id not in self.documents:
            raise InputError("case", f"the statistical agent has no document for case {case_id!r}")
        doc, row = self.documents[case_id], self.oof.get(case_id)
        if row is not None:
            return doc, np.asarray(self.fitted.oof[row], dtype=float), "out-of-fold (CAL)", row
        return doc, self.fitted.predict([doc])[0], "fit on CAL", None

    def _answer(self, probs: np.ndarray, turn: StatTurn) -> tuple[np.ndarray, dict[str, Any]]:
        """The vector the member reports and what its cache key adds (nothing when fixed)."""
        if self.dialogue is None:
            return probs, {}
        adjust = np.asarray(turn.adjust, dtype=float) if turn.adjust else np.zeros(len(probs))
        own = tempered(probs, self.temperature)
        vector = answer_vector(leaned_scores(own, self.leaning, self.dialogue), adjust, turn.peers,
                               self.n_agents, self.dialogue)
        extra = {"leaning": self.leaning.to_dict(), "dialogue": self.dialogue.to_dict(), "n_agents": self.n_agents,
                 "temperature": self.temperature, "peers": list(turn.peers),
                 "adjust": [round(float(v), 9) for v in adjust]}
        return vector, extra

    def classify(self, case_text: str, note: str | None = None, *, context: CallContext = CallContext(),
                 turn: StatTurn = StatTurn()) -> tuple[AgentReport, bool]:
        """The member's answer (the note's words are not read: a responsive member hears
        ``turn``) and whether the call log answered it."""
        doc, probs, source, row = self._vector(context.case_id)
        probs, extra = self._answer(probs, turn)
        messages = (Message(Role.USER, doc),)
        key = self.last_key = cache_key({"backend": STAT_BACKEND, "model_sha256": self.fitted.fit_sha256,
                                         "purpose": "classify", "cal_row": row, **extra}, messages)
        hit = self.log.lookup(key)
        if hit is not None:
            return AgentReport(int(hit.parsed["label"]), np.asarray(hit.probabilities, dtype=float), messages,
                               raw=hit.raw or ""), True
        label = int(np.argmax(probs))
        said = {"label": self.labels[label], "p": round(float(probs[label]), 4), "source": source}
        if extra and (turn.peers or any(turn.adjust)):
            said.update(peers=[self.labels[i] for i in turn.peers], adjusted=bool(any(turn.adjust)))
        raw = json.dumps(said)
        report = AgentReport(label, probs, messages, raw=raw)
        self.log.record(CallRecord(
            key=key, purpose="classify", backend=STAT_BACKEND, model=self.model_id,
            model_sha256=self.fitted.fit_sha256, messages=messages,
            options={"kind": self.fitted.kind, "source": source, **extra},
            raw=raw, parsed={"label": label, "label_name": self.labels[label]},
            probabilities=[float(p) for p in probs], prompt_tokens=0, completion_tokens=0, duration_s=0.0,
            error=None), context)
        return report, False

    def challenge_shift(self, own: np.ndarray, reference: np.ndarray, current: int, alternative: int) -> np.ndarray:
        """How a challenge on (current, alternative) moves this member's adjustment (zero when fixed)."""
        if self.dialogue is None:
            return np.zeros(len(self.labels))
        return challenge_shift(own, reference, current, alternative, self.dialogue)

    def cues(self, case_text: str, current: str, alternative: str, *,
             context: CallContext = CallContext()) -> tuple[list[str], bool]:
        """The features of its own document that most separate ``alternative`` from
        ``current`` in its model, each naming the label it favours (none when fixed;
        nothing is logged)."""
        self.last_key = None
        if self.dialogue is None or not self.dialogue.cues or context.case_id not in self.documents:
            return [], False
        doc = self.documents[context.case_id]
        found = distinguishing_features(self.fitted, doc, self.labels.index(current), self.labels.index(alternative),
                                        self.dialogue.cues)
        return [f"{feature_words(name)} (for {alternative if weight > 0 else current})" for name, weight in found], False


def fit_stat_agent(member: StatMember, dataset: ClinicalDataset, store: Database, *, name: str, role: str,
                   cal: Sequence[ClinicalCase], cal_ids: Sequence[str], others: Sequence[ClinicalCase],
                   other_ids: Sequence[str], rng: np.random.Generator, leaning: Leaning = Leaning(),
                   dialogue: StatDialogue | None = None, n_agents: int = 2) -> StatAgent:
    """Fit ``member`` on the CAL cases only and map every panel case id to its document.

    cal_ids / other_ids : the panel's case ids of ``cal`` / ``others`` (TEST); the TEST
    cases are only read when answered, never fitted on.
    """
    cal_docs = case_documents(member.kind, cal, member.view)
    fitted = fit_stat_model(member.kind, [c.source_id for c in cal], cal_docs, [c.label for c in cal],
                            len(dataset.labels), rng)
    documents = dict(zip(cal_ids, cal_docs))
    documents.update(zip(other_ids, case_documents(member.kind, others, member.view)))
    oof = {cid: i for i, cid in enumerate(cal_ids)}
    agent = StatAgent(fitted, dataset.labels, store, name=name, role=role, documents=documents, oof=oof,
                      view=member.view, leaning=leaning, dialogue=dialogue, n_agents=n_agents)
    if dialogue is not None and dialogue.calibrate:
        agent.temperature = fit_temperature(fitted.oof, [c.label for c in cal])
    return agent
