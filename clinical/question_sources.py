"""Per-benchmark readers behind :func:`clinical.questions.load_benchmark`.

Each reader turns one shipped benchmark folder under ``data/`` into :class:`SourceRow`
records, the rows as stored plus where they came from; :mod:`clinical.questions`
validates them and builds the :class:`~clinical.questions.QuestionItem` objects, so every
benchmark and every user file goes through the same checks.

=====================  ====================================  =============================
benchmark              file (under ``data/``)                item id
=====================  ====================================  =============================
``medqa``              ``medqa/medqa_us_4opt_test.jsonl``    ``medqa-NNNN`` (0-based row,
                                                             as in MedQA-Tri)
``medmcqa``            ``medmcqa/test.jsonl``                ``realidx`` (MedMCQA UUID)
``mmlu-medical``       ``mmlu_medical/test.jsonl``           ``realidx``
``mmlu-pro-health``    ``mmlu_pro_health/test.jsonl``        ``realidx`` (``question_id``)
``mmlu-pro-biology``   ``mmlu_pro_biology/test.jsonl``       ``question_id``
``pubmedqa``           ``pubmedqa/test_ground_truth.json``   PMID
                       + ``pubmedqa/ori_pqal.json``
``agentclinic``        ``clinical_cases/``                   ``agentclinic-NNN`` (0-based
                       ``agentclinic_medqa_extended.jsonl``  line)
``ddxplus8``           ``ddxplus/ddxplus_8way_subset.csv``   ``ddx-NNNN`` (0-based row,
                       + ``ddxplus/release_evidences.json``  the D-CEM case id)
=====================  ====================================  =============================

Choices made here:

* **MedMCQA drops the ``missing_resource`` ids of ``subsets.json``** (80 questions that
  refer to an image or figure the text does not include, e.g. "Diagnosis of the following
  ECG"), because agents only read text: 2,816 - 80 = 2,736 items, the upstream
  ``test_good.jsonl``.  MMLU-medical and MMLU-Pro health keep all their rows (the usual
  1,089 and 818) and mark such ids with the meta entry ``("subsets", "missing_resource")``
  so a caller can drop them; the MedAgentsBench ``hard`` set is marked the same way.
* Where a row carries both ``answer_idx`` and the answer text, the two must agree.
* MMLU-Pro biology stores options as a list: they get the letters A, B, C, ... in order,
  and its ``answer_index`` must match ``answer``.
* PubMedQA uses the 500 PMIDs of the official test split (``test_ground_truth.json``, in
  file order) in the reasoning-required setting: options A = yes, B = no, C = maybe; the
  answer is ``final_decision`` (it must equal the ground-truth file); the context is each
  abstract section as ``"LABEL: text"``, one per line; ``LONG_ANSWER`` is kept in the
  meta entry ``long_answer`` (the reference the relevance metric scores rationales
  against) and is never shown to an agent.
* AgentClinic cases have no options upstream: :mod:`clinical.agentclinic` writes each
  case as a vignette and adds three other cases' diagnoses as distractors (seeded per line);
  meta ``("source", "agentclinic-medqa-extended")``.
* DDXPlus-8 cases (:mod:`clinical.ddxplus_questions`) become eight-option questions: the
  rendered vignette and "Which of the following is the most likely diagnosis?", the eight
  diagnoses as options A-H in the dataset's label order, meta ``("source", <extract>)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from clinical.agentclinic import SOURCE_NAME as AGENTCLINIC_SOURCE
from clinical.agentclinic import agentclinic_cases
from clinical.data_files import expect, read_json, read_jsonl
from clinical.ddxplus_questions import OPTIONS as DDXPLUS_OPTIONS
from clinical.ddxplus_questions import RELATIVE_CSV as DDXPLUS_CSV
from clinical.ddxplus_questions import answer_letter, ddxplus_cases, question_text
from common.errors import InputError
from common.fields import Instance, Seq

__all__ = ["SourceRow", "READERS", "PUBMEDQA_OPTIONS", "read_pubmedqa_train"]

PUBMEDQA_OPTIONS: tuple[tuple[str, str], ...] = (("A", "yes"), ("B", "no"), ("C", "maybe"))
_FIELD = "data_dir"


@dataclass(frozen=True)
class SourceRow:
    """One question as stored, not yet validated.

    ``where`` names the file and line (or key) for error messages; ``options`` is the
    stored value (a dict of letter -> text, or a list of texts in letter order).
    """

    where: str
    item_id: object
    question: object
    options: object
    answer: object
    context: object = ""
    meta: tuple[tuple[str, str], ...] = ()




_LIST = Seq(types=(list,))


def _subsets(data_dir: Path, relative: str) -> dict[str, frozenset[str]]:
    raw = read_json(data_dir, relative)
    what = f"{relative}: expected an object of subset name -> list of ids"
    expect(what, list(expect(what, raw, Instance(dict)).values()), Seq(Instance(list)))
    return {str(name): frozenset(str(i) for i in ids) for name, ids in raw.items()}


def _subset_meta(item_id: str, subsets: dict[str, frozenset[str]]) -> tuple[tuple[str, str], ...]:
    names = [name for name, ids in sorted(subsets.items()) if item_id in ids]
    return (("subsets", ",".join(names)),) if names else ()


def _checked_answer(where: str, row: dict[str, object]) -> object:
    """``answer_idx``, after checking that the stored answer text matches it."""
    letter, options, text = row.get("answer_idx"), row.get("options"), row.get("answer")
    if isinstance(options, dict) and isinstance(letter, str) and letter in options \
            and text is not None and options[letter] != text:
        raise InputError(_FIELD, f"{where}: answer: text differs from option {letter}")
    return letter


def _meta(row: dict[str, object], *keys: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """``(name, str(row[key]))`` for each ``(key, name)`` whose value is present."""
    return tuple((name, str(row[key])) for key, name in keys if row.get(key) is not None)


def read_medqa(data_dir: Path) -> list[SourceRow]:
    """MedQA-USMLE 4-option test (1,273 rows); meta ``step`` from ``meta_info``."""
    return [SourceRow(where, f"medqa-{i:04d}", row.get("question"), row.get("options"),
                      _checked_answer(where, row), meta=_meta(row, ("meta_info", "step")))
            for i, (where, row, _) in enumerate(read_jsonl(data_dir, "medqa/medqa_us_4opt_test.jsonl"))]


def read_medmcqa(data_dir: Path) -> list[SourceRow]:
    """MedMCQA dev single-answer rows without the ``missing_resource`` ids (2,736)."""
    subsets = _subsets(data_dir, "medmcqa/subsets.json")
    missing = subsets.get("missing_resource", frozenset())
    out: list[SourceRow] = []
    for where, row, _ in read_jsonl(data_dir, "medmcqa/test.jsonl"):
        item_id = str(row.get("realidx"))
        if item_id in missing:
            continue
        out.append(SourceRow(where, row.get("realidx"), row.get("question"), row.get("options"),
                             _checked_answer(where, row), meta=_subset_meta(item_id, subsets)))
    return out


def _read_medagents(data_dir: Path, folder: str, meta_keys: tuple[tuple[str, str], ...]
                    ) -> list[SourceRow]:
    """A MedAgentsBench-style folder (``test.jsonl`` with dict options, ``subsets.json``)."""
    subsets = _subsets(data_dir, f"{folder}/subsets.json")
    return [SourceRow(where, row.get("realidx"), row.get("question"), row.get("options"),
                      _checked_answer(where, row),
                      meta=_meta(row, *meta_keys) + _subset_meta(str(row.get("realidx")), subsets))
            for where, row, _ in read_jsonl(data_dir, f"{folder}/test.jsonl")]


def read_mmlu_medical(data_dir: Path) -> list[SourceRow]:
    """MMLU test, six medical subjects (1,089 rows); meta ``subject``."""
    return _read_medagents(data_dir, "mmlu_medical", (("subject", "subject"),))


def read_mmlu_pro_health(data_dir: Path) -> list[SourceRow]:
    """MMLU-Pro health category (818 rows, 3-10 options); meta ``src``."""
    return _read_medagents(data_dir, "mmlu_pro_health", (("src", "src"),))


def read_mmlu_pro_biology(data_dir: Path) -> list[SourceRow]:
    """MMLU-Pro biology category (717 rows, options as a list); meta ``src``."""
    out: list[SourceRow] = []
    for where, row, _ in read_jsonl(data_dir, "mmlu_pro_biology/test.jsonl"):
        answer, index = row.get("answer"), row.get("answer_index")
        if isinstance(answer, str) and isinstance(index, int) and answer != chr(ord("A") + index):
            raise InputError(_FIELD, f"{where}: answer: {answer!r} does not match answer_index {index}")
        out.append(SourceRow(where, row.get("question_id"), row.get("question"), row.get("options"),
                             answer, meta=_meta(row, ("src", "src"))))
    return out


def _pubmedqa_context(where: str, record: dict[str, object]) -> str:
    contexts, labels = record.get("CONTEXTS"), record.get("LABELS")
    same = f"{where}: CONTEXTS and LABELS must be lists of the same length"
    expect(same, labels, Seq(min_len=len(expect(same, contexts, _LIST)), max_len=len(contexts), types=(list,)))
    return "\n".join(f"{label}: {text}" for label, text in zip(labels, contexts))


def _pubmedqa_records(data_dir: Path) -> tuple[dict[str, object], dict[str, object]]:
    """(test ground truth, every PQA-L record), both keyed by PMID."""
    truth = read_json(data_dir, "pubmedqa/test_ground_truth.json")
    records = read_json(data_dir, "pubmedqa/ori_pqal.json")
    for data in (truth, records):
        expect("pubmedqa: both JSON files must hold an object keyed by PMID", data, Instance(dict))
    return truth, records


def _pubmedqa_row(pmid: str, record: object, where: str) -> SourceRow:
    expect(f"{where}: not an object", record, Instance(dict))
    letters = {text: letter for letter, text in PUBMEDQA_OPTIONS}
    decision = record.get("final_decision")
    return SourceRow(where, pmid, record.get("QUESTION"), [t for _, t in PUBMEDQA_OPTIONS],
                     letters.get(str(decision), decision), _pubmedqa_context(where, record),
                     _meta(record, ("YEAR", "year"), ("LONG_ANSWER", "long_answer")))


def read_pubmedqa(data_dir: Path) -> list[SourceRow]:
    """PubMedQA PQA-L official test split (500 PMIDs); meta ``year`` where known."""
    truth, records = _pubmedqa_records(data_dir)
    out: list[SourceRow] = []
    for pmid, label in truth.items():
        where = f"pubmedqa/ori_pqal.json PMID {pmid}"
        record = expect(f"{where}: test PMID missing from ori_pqal.json", records.get(pmid), Instance(dict))
        decision = record.get("final_decision")
        if decision != label:
            raise InputError(_FIELD, f"{where}: final_decision {decision!r} differs from the test "
                                     f"ground truth {label!r}")
        out.append(_pubmedqa_row(pmid, record, where))
    return out


def read_pubmedqa_train(data_dir: Path) -> list[SourceRow]:
    """The other 500 PQA-L PMIDs (upstream's train/cross-validation part), in file order;
    the same item form as :func:`read_pubmedqa`, the answer from ``final_decision``.  No
    evaluation of this project reads them."""
    truth, records = _pubmedqa_records(data_dir)
    return [_pubmedqa_row(pmid, record, f"pubmedqa/ori_pqal.json PMID {pmid}")
            for pmid, record in records.items() if pmid not in truth]


def read_agentclinic(data_dir: Path) -> list[SourceRow]:
    """AgentClinic-MedQA extended (214 cases) as four-option diagnosis questions."""
    return [SourceRow(case.where, case.item_id, case.question, list(case.options), case.answer,
                      meta=(("source", AGENTCLINIC_SOURCE),)) for case in agentclinic_cases(data_dir)]


def read_ddxplus8(data_dir: Path) -> list[SourceRow]:
    """DDXPlus-8 (825 synthetic patients) as eight-option diagnosis questions."""
    return [SourceRow(f"{DDXPLUS_CSV} case {case.case_id}", case.case_id, question_text(case),
                      dict(DDXPLUS_OPTIONS), answer_letter(case),
                      meta=(("source", case.source),) if case.source else ())
            for case in ddxplus_cases(data_dir)]


READERS: dict[str, Callable[[Path], list[SourceRow]]] = {
    "medqa": read_medqa,
    "medmcqa": read_medmcqa,
    "mmlu-medical": read_mmlu_medical,
    "mmlu-pro-health": read_mmlu_pro_health,
    "mmlu-pro-biology": read_mmlu_pro_biology,
    "pubmedqa": read_pubmedqa,
    "agentclinic": read_agentclinic,
    "ddxplus8": read_ddxplus8,
}
