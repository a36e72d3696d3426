"""The shipped items the project's evaluations read, per benchmark that training draws from.

:mod:`clinical.training_split` keeps every id listed here out of TRAIN (and out of
HELD-OUT, which must be fresh for the trained-versus-untrained comparison).  The sources,
all read from the shipped data:

===================  ======================================================================
source               ids
===================  ======================================================================
``sag-suite``        ``data/sag_eval/subsets.json``: the ``eval`` and ``calibration`` ids of
                     the benchmark (the suite's accuracy, relevance, fairness, robustness and
                     consistency parts and the D-CEM group's calibration read only these)
``sag-safety``       ``msb-...`` ids of ``harmful_eval`` and ``calibration``; for MedMCQA, the
                     questions behind the ``benign-<id>`` requests of ``benign_eval`` and
                     ``calibration`` (the same question text, sent without its options)
``medqa-tri``        every MedQA-Tri item (``medqa-NNNN``, the same ids as MedQA): the D-CEM
                     clinical CAL/TEST splits may draw any of them
``agentclinic``      MedQA items whose correct answer is the diagnosis of an AgentClinic case
                     (same words after lowercasing and dropping punctuation and possessive
                     "'s"): AgentClinic rewrote MedQA questions as OSCE cases, so such an
                     item may be the source of a case the evaluation asks
===================  ======================================================================

The benign requests' ``benign_train`` part fits the SAG evaluation's learned safety screen;
it is training data, not an evaluation, and is not listed.  The SAG runs of ``python -m sag
run`` draw from every item outside TRAIN (:func:`clinical.training_split.drop_train`), so
they need no entry here.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping

from clinical import medqa_tri
from clinical.data_files import expect, read_json
from clinical.questions import DEFAULT_DATA_DIR, QuestionItem, load_benchmark
from clinical.safety_requests import BENIGN_PREFIX, HARMFUL_PREFIX
from common.errors import InputError
from common.fields import Instance, Seq

__all__ = ["EVAL_SUBSETS_FILE", "reserved_sources", "agentclinic_sources"]

EVAL_SUBSETS_FILE = "sag_eval/subsets.json"


def _suite() -> Mapping[str, object]:
    data = read_json(DEFAULT_DATA_DIR, EVAL_SUBSETS_FILE)
    what = f"{EVAL_SUBSETS_FILE}: expected the keys benchmarks and safety"
    for part in (expect(what, data, Instance(dict)).get("benchmarks"), data.get("safety")):  # type: ignore[union-attr]
        expect(what, part, Instance(dict))
    return data  # type: ignore[return-value]


def _ids(value: object, where: str) -> list[str]:
    return list(expect(f"{EVAL_SUBSETS_FILE}: {where} must be a list of ids", value, Seq(Instance(str), types=(list,))))


def _suite_ids(benchmark: str) -> frozenset[str]:
    benchmarks = _suite()["benchmarks"]
    part = expect(f"{EVAL_SUBSETS_FILE}: no subset for {benchmark}", benchmarks.get(benchmark),  # type: ignore[union-attr]
                  Instance(dict))
    return frozenset(_ids(part.get("eval"), f"{benchmark}.eval") + _ids(part.get("calibration"),
                                                                         f"{benchmark}.calibration"))


def _safety_ids(keys: tuple[str, ...]) -> list[str]:
    safety = _suite()["safety"]
    return [i for key in keys for i in _ids(safety.get(key), f"safety.{key}")]  # type: ignore[union-attr]


def _answer_key(text: str) -> tuple[str, ...]:
    return tuple(re.sub(r"[^a-z0-9]+", " ", text.lower().replace("'s", "")).split())


def agentclinic_sources(medqa: tuple[QuestionItem, ...], agentclinic: tuple[QuestionItem, ...]) -> frozenset[str]:
    """MedQA ids whose correct answer reads as the diagnosis of an AgentClinic case."""
    diagnoses = {_answer_key(it.option_text(it.answer)) for it in agentclinic}
    return frozenset(it.item_id for it in medqa if _answer_key(it.option_text(it.answer)) in diagnoses)


@lru_cache(maxsize=None)
def reserved_sources(benchmark: str) -> Mapping[str, frozenset[str]]:
    """The ids of ``benchmark`` each evaluation source reads (see the module docstring)."""
    if benchmark == "medqa":
        return {"sag-suite": _suite_ids("medqa"),
                "medqa-tri": frozenset(it.item_id for it in medqa_tri.load_medqa_tri()),
                "agentclinic": agentclinic_sources(load_benchmark("medqa"), load_benchmark("agentclinic"))}
    if benchmark == "medmcqa":
        benign = [i[len(BENIGN_PREFIX):] for i in _safety_ids(("benign_eval", "calibration"))
                  if i.startswith(BENIGN_PREFIX)]
        return {"sag-suite": _suite_ids("medmcqa"), "sag-safety": frozenset(benign)}
    if benchmark == "pubmedqa":
        return {"sag-suite": _suite_ids("pubmedqa")}
    if benchmark == "medsafetybench":
        return {"sag-safety": frozenset(i for i in _safety_ids(("harmful_eval", "calibration"))
                                        if i.startswith(HARMFUL_PREFIX))}
    if benchmark == "ddxplus8":
        return {}
    raise InputError("benchmark", f"no training split for {benchmark!r}")
