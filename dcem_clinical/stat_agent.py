"""The statistical panel member: a non-LLM classifier that answers like an LLM agent.

A member key ``stat`` names the dataset's default kind (DDXPlus-8: ``nb-evidence``, naive
Bayes over the patient's evidence codes; MedQA-Tri: ``tfidf-lr``, TF-IDF of the question
text and a logistic regression); ``stat:KIND`` names one kind of
:data:`dcem_clinical.stat_model.STAT_KINDS`.  In a cell the member is fit on the seed's
CAL cases only (:func:`fit_stat_agent`); it answers CAL cases with its out-of-fold
vectors and every other case with the model fit on all of CAL.

Each turn goes through the same call log as an LLM turn (backend ``stat``, model
``stat:KIND``, model sha256 = the fit's sha256, the message = the document the model
read), so the walkthrough and the store see it.  It has no dialogue: a CONTINUE note, a
steer or a peer's answer does not change its answer, and it lists no cues.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from clinical.datasets import ClinicalCase, ClinicalDataset
from common.db import Database
from dcem.errors import ConfigError, InputError
from dcem_clinical.agent import AgentReport
from dcem_clinical.stat_model import STAT_KINDS, FittedStat, fit_stat_model
from runtime.call_log import CallContext, CallLog, CallRecord, cache_key
from runtime.messages import Message, Role

__all__ = ["STAT_BACKEND", "DEFAULT_KIND", "StatMember", "StatAgent", "is_stat_key", "stat_member",
           "stat_key_help", "case_documents", "fit_stat_agent"]

STAT_BACKEND = "stat"
DEFAULT_KIND = {"ddxplus8": "nb-evidence", "medqa-tri": "tfidf-lr"}


def stat_key_help() -> str:
    """The statistical member keys, for error messages and help text."""
    kinds = ", ".join(f"stat:{k} ({' or '.join(d)})" for k, d in STAT_KINDS.items())
    return f"stat (the dataset's default: {', '.join(f'{d} {k}' for d, k in DEFAULT_KIND.items())}), {kinds}"


def is_stat_key(key: str) -> bool:
    """Whether a member key names a statistical agent (``stat`` or ``stat:...``)."""
    key = key.strip()
    return key == STAT_BACKEND or key.startswith(STAT_BACKEND + ":")


@dataclass(frozen=True)
class StatMember:
    """An unfitted statistical panel member: its kind (fit per cell on that cell's CAL)."""

    kind: str

    @property
    def key(self) -> str:
        return f"{STAT_BACKEND}:{self.kind}"


def stat_member(key: str, dataset: str) -> StatMember:
    """The member a ``stat`` / ``stat:KIND`` key names for ``dataset``; ConfigError otherwise."""
    key = key.strip()
    kind = DEFAULT_KIND.get(dataset, "tfidf-lr") if key == STAT_BACKEND else key.partition(":")[2].strip()
    if kind not in STAT_KINDS:
        raise ConfigError("agents", f"unknown statistical agent {key!r}; valid: {stat_key_help()}")
    if dataset not in STAT_KINDS[kind]:
        raise ConfigError("agents", f"{key!r} cannot read {dataset} cases; valid: {stat_key_help()}")
    return StatMember(kind)


@lru_cache(maxsize=2)
def _evidence_documents() -> Mapping[str, str]:
    from clinical.ddxplus import load_ddxplus8

    return {c.case_id: _evidence_document(c.evidences) for c in load_ddxplus8()}


def _evidence_document(evidences: Sequence[str]) -> str:
    """Evidence codes as tokens: each code, and the question of a multi-valued answer."""
    tokens: list[str] = []
    for code in evidences:
        tokens.append(code)
        if "_@_" in code:
            tokens.append(code.split("_@_", 1)[0])
    return " ".join(tokens)


def case_documents(kind: str, cases: Sequence[ClinicalCase]) -> list[str]:
    """The document each case gives a statistical model of ``kind`` (codes or case text)."""
    if kind == "tfidf-lr":
        return [c.text for c in cases]
    table = _evidence_documents()
    missing = [c.source_id for c in cases if c.source_id not in table]
    if missing:
        raise InputError("cases", f"no DDXPlus evidence codes for case {missing[0]!r}")
    return [table[c.source_id] for c in cases]


class StatAgent:
    """A fitted statistical member with the panel's agent interface (classify, cues, info).

    documents : panel case id -> the document it reads; oof : panel case id of a CAL case
    -> its row in ``fitted.oof`` (its out-of-fold vector).
    """

    def __init__(self, fitted: FittedStat, labels: Sequence[str], store: Database, *, name: str, role: str,
                 documents: Mapping[str, str], oof: Mapping[str, int]) -> None:
        self.fitted, self.labels, self.name, self.role = fitted, tuple(labels), name, role
        self.documents, self.oof = dict(documents), dict(oof)
        self.log = CallLog(store)
        self.last_key: str | None = None

    @property
    def model_id(self) -> str:
        return f"{STAT_BACKEND}:{self.fitted.kind}"

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_id, "backend": STAT_BACKEND,
                "model_sha256": self.fitted.fit_sha256, "fit_cases": len(self.fitted.fit_ids),
                "cal_oof_accuracy": self.fitted.oof_accuracy}

    def _vector(self, case_id: str | None) -> tuple[str, np.ndarray, str, int | None]:
        """(document, probability vector, source, CAL row or None) of a panel case."""
        if case_id is None or case_id not in self.documents:
            raise InputError("case", f"the statistical agent has no document for case {case_id!r}")
        doc, row = self.documents[case_id], self.oof.get(case_id)
        if row is not None:
            return doc, np.asarray(self.fitted.oof[row], dtype=float), "out-of-fold (CAL)", row
        return doc, self.fitted.predict([doc])[0], "fit on CAL", None

    def classify(self, case_text: str, note: str | None = None, *,
                 context: CallContext = CallContext()) -> tuple[AgentReport, bool]:
        """The member's answer (the note is ignored) and whether the call log answered it."""
        doc, probs, source, row = self._vector(context.case_id)
        messages = (Message(Role.USER, doc),)
        key = self.last_key = cache_key({"backend": STAT_BACKEND, "model_sha256": self.fitted.fit_sha256,
                                         "purpose": "classify", "cal_row": row}, messages)
        hit = self.log.lookup(key)
        if hit is not None:
            return AgentReport(int(hit.parsed["label"]), np.asarray(hit.probabilities, dtype=float), messages,
                               raw=hit.raw or ""), True
        label = int(np.argmax(probs))
        raw = json.dumps({"label": self.labels[label], "p": round(float(probs[label]), 4), "source": source})
        report = AgentReport(label, probs, messages, raw=raw)
        self.log.record(CallRecord(
            key=key, purpose="classify", backend=STAT_BACKEND, model=self.model_id,
            model_sha256=self.fitted.fit_sha256, messages=messages, options={"kind": self.fitted.kind,
                                                                             "source": source},
            raw=raw, parsed={"label": label, "label_name": self.labels[label]},
            probabilities=[float(p) for p in probs], prompt_tokens=0, completion_tokens=0, duration_s=0.0,
            error=None), context)
        return report, False

    def cues(self, case_text: str, current: str, alternative: str, *,
             context: CallContext = CallContext()) -> tuple[list[str], bool]:
        """No dialogue: a statistical member lists no cues (nothing is logged)."""
        self.last_key = None
        return [], False


def fit_stat_agent(member: StatMember, dataset: ClinicalDataset, store: Database, *, name: str, role: str,
                   cal: Sequence[ClinicalCase], cal_ids: Sequence[str], others: Sequence[ClinicalCase],
                   other_ids: Sequence[str], rng: np.random.Generator) -> StatAgent:
    """Fit ``member`` on the CAL cases only and map every panel case id to its document.

    cal_ids / other_ids : the panel's case ids of ``cal`` / ``others`` (TEST); the TEST
    cases are only read when answered, never fitted on.
    """
    cal_docs = case_documents(member.kind, cal)
    fitted = fit_stat_model(member.kind, [c.source_id for c in cal], cal_docs, [c.label for c in cal],
                            len(dataset.labels), rng)
    documents = dict(zip(cal_ids, cal_docs))
    documents.update(zip(other_ids, case_documents(member.kind, others)))
    oof = {cid: i for i, cid in enumerate(cal_ids)}
    return StatAgent(fitted, dataset.labels, store, name=name, role=role, documents=documents, oof=oof)
