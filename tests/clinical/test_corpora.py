"""Retrieval corpora: counts from each data/*/SOURCE.md, stable unique ids, the digest, and
that no PubMedQA answer (LONG_ANSWER) ever enters a passage."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from clinical.corpora import CORPORA, MEDLINEPLUS_FILE, Passage, corpus_digest, load_corpus
from clinical.ddxplus import PATHOLOGY_TO_LABEL
from clinical.questions import load_benchmark
from common.errors import ConfigError, InputError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"

# data/medlineplus_ddxplus/SOURCE.md, data/pubmedqa/SOURCE.md, data/ddxplus/SOURCE.md (49 conditions)
COUNTS = {"medlineplus": 74, "pubmedqa": 1000, "ddxplus": 49}
PREFIX = {"medlineplus": "mlp-", "pubmedqa": "pmq-", "ddxplus": "ddx-"}
# First 16 hex of corpus_digest: the names of the cached index folders.  A change here
# means the shipped data or the passage format changed, and every cached index rebuilds.
DIGEST_PREFIX = {"medlineplus": "5a58762f03c808f6", "pubmedqa": "ffc7f624880bc701",
                 "ddxplus": "2a127e291dd4a6a5"}
# PQA-L item whose abstract's RESULTS section starts with the same two sentences as its
# conclusion (upstream text); the rest of its conclusion is in no passage (tested below).
RESULTS_REPEAT_CONCLUSION = {"24519615"}


def pqal() -> dict[str, dict[str, object]]:
    return json.loads((DATA / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))


def test_names() -> None:
    assert CORPORA == ("medlineplus", "pubmedqa", "ddxplus")


@pytest.mark.parametrize("name", CORPORA)
def test_counts_ids_and_fields(name: str) -> None:
    passages = load_corpus(name)
    assert len(passages) == COUNTS[name]
    assert len({p.passage_id for p in passages}) == len(passages)
    for p in passages:
        assert isinstance(p, Passage) and p.corpus == name
        assert p.passage_id.startswith(PREFIX[name]) and re.fullmatch(r"[a-z]+-[a-z0-9-]+", p.passage_id)
        assert p.source_id and p.title and p.text.strip() == p.text and p.text


def test_ids_unique_across_corpora_and_cached() -> None:
    ids = [p.passage_id for name in CORPORA for p in load_corpus(name)]
    assert len(set(ids)) == len(ids) == sum(COUNTS.values())
    assert load_corpus("pubmedqa") is load_corpus("pubmedqa")


@pytest.mark.parametrize("bad", ["pubmed", "", "MedlinePlus", None])
def test_unknown_corpus_lists_the_names(bad: object) -> None:
    with pytest.raises(ConfigError, match="medlineplus, pubmedqa, ddxplus") as info:
        load_corpus(bad)  # type: ignore[arg-type]
    assert info.value.field == "corpus"
    with pytest.raises(ConfigError):
        corpus_digest(bad)  # type: ignore[arg-type]


def test_digest_is_stable_and_names_the_content() -> None:
    for name in CORPORA:
        digest = corpus_digest(name)
        assert re.fullmatch(r"[0-9a-f]{64}", digest) and digest == corpus_digest(name)
        assert digest[:16] == DIGEST_PREFIX[name], name


def test_medlineplus_as_stored() -> None:
    passages = load_corpus("medlineplus")
    rows = [json.loads(line) for line in (DATA / MEDLINEPLUS_FILE).read_text(encoding="utf-8").splitlines()]
    stored = [(r["pmid"], r["title"], r["text"].strip()) for r in rows]
    assert [(p.source_id, p.title, p.text) for p in passages] == stored
    assert passages[0].passage_id == "mlp-1" and passages[-1].passage_id == "mlp-74"
    assert len({p.source_id for p in passages}) == 73 and len({p.text for p in passages}) == 66
    assert len({p.title for p in passages}) == 37


def test_pubmedqa_passages_are_the_contexts_keyed_by_pmid() -> None:
    passages = {p.source_id: p for p in load_corpus("pubmedqa")}
    records = pqal()
    assert set(passages) == set(records)
    for pmid, passage in passages.items():
        assert passage.passage_id == f"pmq-{pmid}" and passage.title == f"PubMed {pmid}"
        for label, section in zip(records[pmid]["LABELS"], records[pmid]["CONTEXTS"]):  # type: ignore[call-overload]
            assert f"{label}: {section}".strip() in passage.text
    for item in load_benchmark("pubmedqa"):  # the evaluated items can exclude their own abstract
        assert passages[item.item_id].text == item.context


def test_no_long_answer_in_any_pubmedqa_passage() -> None:
    """Every one of the 1,000 PQA-L items: its LONG_ANSWER (the answer) is in no passage."""
    texts = [p.text for p in load_corpus("pubmedqa")]
    joined = "\x00".join(texts)
    prefix_found: set[str] = set()
    for pmid, record in pqal().items():
        answer = str(record["LONG_ANSWER"]).strip()
        assert len(answer) >= 60
        assert answer not in joined, pmid
        if answer[:80] in joined:
            prefix_found.add(pmid)
        own_sections = "\n".join(record["CONTEXTS"])  # type: ignore[arg-type]
        for sentence in re.split(r"(?<=[.!?])\s+", answer):
            if len(sentence) >= 30 and sentence not in own_sections:
                assert sentence not in joined, (pmid, sentence)
        assert "LONG_ANSWER" not in joined and "final_decision" not in joined
    # The one exception is the upstream abstract that repeats its conclusion's opening in
    # RESULTS: only its own passage holds it, the one excluded when that item is asked.
    assert prefix_found == RESULTS_REPEAT_CONCLUSION
    for pmid in prefix_found:
        answer_start = str(pqal()[pmid]["LONG_ANSWER"])[:80]
        assert [p.source_id for p in load_corpus("pubmedqa") if answer_start in p.text] == [pmid]


def test_ddxplus_passages_name_each_condition_with_its_evidence_questions() -> None:
    conditions = json.loads((DATA / "ddxplus" / "release_conditions.json").read_text(encoding="utf-8"))
    evidences = json.loads((DATA / "ddxplus" / "release_evidences.json").read_text(encoding="utf-8"))
    passages = {p.source_id: p for p in load_corpus("ddxplus")}
    assert set(passages) == {c["cond-name-eng"] for c in conditions.values()}
    assert set(PATHOLOGY_TO_LABEL) <= set(passages)
    for condition in conditions.values():
        passage = passages[condition["cond-name-eng"]]
        assert passage.title == condition["cond-name-eng"]
        assert passage.text.startswith(f"{passage.title} (ICD-10 {condition['icd10-id']};")
        for code in list(condition["symptoms"]) + list(condition["antecedents"]):
            assert evidences[code]["question_en"] in passage.text
    assert passages["Guillain-Barré syndrome"].passage_id == "ddx-guillain-barre-syndrome"
    assert passages["Possible NSTEMI / STEMI"].passage_id == "ddx-possible-nstemi-stemi"


def copy_medlineplus(tmp_path: Path) -> Path:
    target = tmp_path / MEDLINEPLUS_FILE
    target.parent.mkdir(parents=True)
    shutil.copy(DATA / MEDLINEPLUS_FILE, target)
    return target


def test_digest_follows_the_data(tmp_path: Path) -> None:
    target = copy_medlineplus(tmp_path)
    assert corpus_digest("medlineplus", data_dir=tmp_path) == corpus_digest("medlineplus")
    changed = tmp_path / "changed"
    copy_medlineplus(changed)
    lines = target.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["text"] += " Extra sentence."
    (changed / MEDLINEPLUS_FILE).write_text("\n".join([json.dumps(row)] + lines[1:]) + "\n", encoding="utf-8")
    assert corpus_digest("medlineplus", data_dir=changed) != corpus_digest("medlineplus")
    assert load_corpus("medlineplus", data_dir=changed)[0].text.endswith("Extra sentence.")


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="medlineplus_ddxplus_passages.jsonl not found") as info:
        load_corpus("medlineplus", data_dir=tmp_path)
    assert info.value.field == "data_dir"
    target = copy_medlineplus(tmp_path)
    target.write_text(target.read_text(encoding="utf-8") + '{"pmid": "x", "title": "T"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 75: text must be a non-empty string"):
        load_corpus("medlineplus", data_dir=tmp_path)
    with pytest.raises(InputError, match="ori_pqal.json not found"):
        load_corpus("pubmedqa", data_dir=tmp_path)


def test_medlineplus_file_is_the_documented_copy() -> None:
    source = (DATA / "medlineplus_ddxplus" / "SOURCE.md").read_text(encoding="utf-8")
    assert "clinical.corpora" in source.splitlines()[0]
    digest = hashlib.sha256((DATA / MEDLINEPLUS_FILE).read_bytes()).hexdigest()
    assert digest.startswith("61f5c879") and digest.endswith("cb396ea")
    assert "116,403 B, 74 lines" in source
